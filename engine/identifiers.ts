/**
 * The maximum length of every identifier a request can name. Each kind is checked in exactly one
 * place: the engine function that turns it into a store key (or the registry's name and
 * reference parsers), before the store is touched. LMDB refuses keys over 1978 bytes with an
 * exception, so an unchecked 10 KB identifier would otherwise surface as a 500; here it is a 4xx
 * whose message names the limit. docs/reference.md "Identifier limits" lists the same table.
 */
import { fail, type ErrorCode } from './errors.js';

/** One identifier kind: its name in messages, its maximum length (characters) and why. */
export interface IdentifierLimit {
  label: string;
  max: number;
  source: string;
}

/**
 * The limits. All are far below LMDB's key limit even when several are joined into one key
 * (a repository, a digest and a tag together stay under 600 bytes).
 */
export const IDENTIFIER_LIMITS = {
  /** `<app>/<process-type>`; the distribution spec's clients limit a name to 255 characters. */
  repository: { label: 'repository name', max: 255, source: 'distribution spec (repository name)' },
  /** Distribution spec tag grammar `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`. */
  tag: { label: 'tag', max: 128, source: 'distribution spec (tag)' },
  /** `algorithm:encoded`; sha256 needs 71, the limit leaves room for longer algorithms to be named in errors. */
  digest: { label: 'digest', max: 256, source: 'OCI image spec (digest); only sha256 is stored' },
  /** An app id (UUID, 36) or name (3–30). */
  app: { label: 'app id or name', max: 36, source: 'platform API (app id is a UUID, app name at most 30)' },
  /** A team id (UUID, 36) or name (3–30). */
  team: { label: 'team id or name', max: 36, source: 'platform API (team id is a UUID, team name at most 30)' },
  /** Authorization ids are UUIDs; `~` names the API key. */
  authorization: { label: 'authorization id', max: 36, source: 'platform API (UUID)' },
  /** Account ids are UUIDs. */
  account: { label: 'account id', max: 36, source: 'platform API (UUID)' },
  /** OAuth client ids are UUIDs. */
  client: { label: 'client id', max: 36, source: 'platform API (UUID)' },
  /** RFC 5321: a forward path (an address) is at most 256 octets including its brackets. */
  email: { label: 'e-mail address', max: 254, source: 'RFC 5321 (path length)' },
  /** Process types follow the distribution grammar of a path component, at most 128 characters. */
  processType: { label: 'process type', max: 128, source: 'platform API (formation type)' },
} as const satisfies Record<string, IdentifierLimit>;

export type IdentifierKind = keyof typeof IDENTIFIER_LIMITS;

/**
 * Returns `value` when it is within the limit of `kind` and has no control character (U+0000–U+001F, U+007F).
 * @param code the error code the caller's front door expects (default INVALID_PARAMS).
 * @throws SlipwayError `code` naming the kind, its limit and the length received, or the control character.
 */
export function checkIdentifier(kind: IdentifierKind, value: string, code: ErrorCode = 'INVALID_PARAMS'): string {
  const limit: IdentifierLimit = IDENTIFIER_LIMITS[kind];
  if (value.length > limit.max) {
    throw fail(code, `${limit.label} too long: ${value.length} characters, at most ${limit.max} allowed (${limit.source})`, { limit: limit.max, length: value.length });
  }
  // No identifier has control characters; NUL cannot be a store key and U+001F separates key parts.
  if (/[\u0000-\u001f\u007f]/.test(value)) throw fail(code, `${limit.label} contains a control character`);
  return value;
}
