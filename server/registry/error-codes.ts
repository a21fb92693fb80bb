/**
 * The registry's one error table: engine condition → distribution error code and HTTP status
 * (distribution spec "Error Codes"; body `{"errors":[{"code","message","detail"}]}`;
 * docs/architecture.md "Errors"). Headers that depend on the condition (Allow, Range,
 * Content-Range, Retry-After) are added by `sendRegistryError` (routes.ts).
 */
import type { ErrorDescriptor, ErrorTable } from '../http/error-table.js';

/** What each distribution code sent here tells the client (the spec's descriptions). */
const MEANING = {
  BLOB_UNKNOWN: 'blob unknown to registry',
  BLOB_UPLOAD_INVALID: 'blob upload invalid: the upload cannot proceed as sent',
  BLOB_UPLOAD_UNKNOWN: 'blob upload unknown to registry',
  DIGEST_INVALID: 'provided digest did not match uploaded content',
  MANIFEST_BLOB_UNKNOWN: 'manifest references a blob unknown to registry',
  MANIFEST_INVALID: 'manifest invalid',
  MANIFEST_UNKNOWN: 'manifest unknown to registry',
  NAME_INVALID: 'invalid repository name',
  NAME_UNKNOWN: 'repository name not known to registry',
  SIZE_INVALID: 'provided length did not match content length, or the content is too large',
  RANGE_INVALID: 'requested range is invalid or not satisfiable',
  PAGINATION_NUMBER_INVALID: 'invalid number of results requested',
  UNSUPPORTED: 'the operation is unsupported',
  UNAUTHORIZED: 'authentication required',
  DENIED: 'requested access to the resource is denied',
  TOOMANYREQUESTS: 'too many requests',
  // Not in the distribution spec's table; docker/distribution's registry sends it (errcode.ErrorCodeUnavailable).
  UNAVAILABLE: 'service unavailable',
} as const;

type RegistryCode = keyof typeof MEANING;

const row = (code: RegistryCode, status: number): ErrorDescriptor => ({ code, status, description: MEANING[code] });

/** Every engine condition → its distribution `code` and status. */
export const REGISTRY_ERRORS: ErrorTable = {
  BLOB_UNKNOWN: row('BLOB_UNKNOWN', 404),
  BLOB_UPLOAD_INVALID: row('BLOB_UPLOAD_INVALID', 400),
  BLOB_UPLOAD_UNKNOWN: row('BLOB_UPLOAD_UNKNOWN', 404),
  DIGEST_INVALID: row('DIGEST_INVALID', 400),
  MANIFEST_BLOB_UNKNOWN: row('MANIFEST_BLOB_UNKNOWN', 400),
  MANIFEST_INVALID: row('MANIFEST_INVALID', 400),
  MANIFEST_UNKNOWN: row('MANIFEST_UNKNOWN', 404),
  NAME_INVALID: row('NAME_INVALID', 400),
  NAME_UNKNOWN: row('NAME_UNKNOWN', 404),
  // An out-of-order chunk: 416 with the current Range (distribution spec "Pushing a blob in chunks").
  CHUNK_RANGE_MISMATCH: row('BLOB_UPLOAD_INVALID', 416),
  BYTE_RANGE_INVALID: row('BLOB_UPLOAD_INVALID', 416),
  RANGE_NOT_SATISFIABLE: row('RANGE_INVALID', 416),
  MANIFEST_TOO_LARGE: row('SIZE_INVALID', 413),
  // Terminal on purpose: MANIFEST_INVALID would make containers/image retry other formats.
  UNSUPPORTED_ARCHITECTURE: row('DENIED', 403),
  PAGINATION_INVALID: row('PAGINATION_NUMBER_INVALID', 400),
  UPLOAD_BUSY: row('BLOB_UPLOAD_INVALID', 409),
  TOO_SLOW: row('BLOB_UPLOAD_INVALID', 408),
  UNAVAILABLE: row('TOOMANYREQUESTS', 503),
  // docker/distribution's own code for a registry that cannot serve right now (errcode.ErrorCodeUnavailable).
  STORE_UNAVAILABLE: row('UNAVAILABLE', 503),
  // The blob store away: the same code, not TOOMANYREQUESTS, which clients read as rate limiting.
  BLOB_STORE_UNAVAILABLE: row('UNAVAILABLE', 503),
  // 507 Insufficient Storage (RFC 4918 §11.5): docker prints the status line ("507 Insufficient
  // Storage"), containers/image the code and message; UNAVAILABLE is retried by both (docs/faults.md).
  STORAGE_FULL: row('UNAVAILABLE', 507),
  STORAGE_STALLED: row('UNAVAILABLE', 503),
  METHOD_NOT_ALLOWED: row('UNSUPPORTED', 405),
  UNAUTHORIZED: row('UNAUTHORIZED', 401),
  DENIED: row('DENIED', 403),
  NOT_FOUND: row('NAME_UNKNOWN', 404),
  CONFLICT: row('DENIED', 409),
  INVALID_PARAMS: row('UNSUPPORTED', 400),
  BAD_REQUEST: row('UNSUPPORTED', 400),
  BODY_TOO_LARGE: row('SIZE_INVALID', 413),
  RATE_LIMITED: row('TOOMANYREQUESTS', 429),
  // Platform API and OAuth conditions; the registry does not raise them, the rows keep the table complete.
  NOT_ACCEPTABLE: row('UNSUPPORTED', 406),
  INVALID_CLIENT: row('UNAUTHORIZED', 401),
  INVALID_GRANT: row('UNAUTHORIZED', 401),
  INVALID_SCOPE: row('DENIED', 403),
  UNSUPPORTED_GRANT_TYPE: row('UNSUPPORTED', 400),
};
