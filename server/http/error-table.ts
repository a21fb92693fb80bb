/**
 * The shape of a host's error table: every engine condition (engine/errors.ts) → the wire code,
 * HTTP status and a description of what that answer tells the client. Typed as a full
 * `Record<ErrorCode, …>`, so adding an engine code fails compilation until every host maps it
 * (docs/architecture.md "Errors"). Messages come from the SlipwayError, never from the table.
 */
import type { ErrorCode } from '../../engine/errors.js';

/** One row: `code` is the host's wire code (distribution `code`, API `id`, RFC 6749 `error`). */
export interface ErrorDescriptor {
  readonly code: string;
  readonly status: number;
  readonly description: string;
}

/** A host's complete error table; `D` is the row shape (HTML pages have their own). */
export type ErrorTable<D = ErrorDescriptor> = Readonly<Record<ErrorCode, D>>;
