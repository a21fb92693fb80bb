/**
 * Domain errors of the engine. They carry a stable `code` naming the engine condition and a
 * human message, never an HTTP status or a wire code: each front door maps every code to its
 * own wire format in one descriptor table whose type is `Record<ErrorCode, …>`, so a new code
 * does not compile until every host maps it (docs/architecture.md "Errors"):
 * server/registry/error-codes.ts, server/api/error-codes.ts, server/auth-host/oauth-errors.ts
 * (token endpoint) and server/auth-host/page-errors.ts (HTML pages).
 *
 * A code may share its name with a wire code only when it means the same thing there (the
 * distribution codes below, RFC 6749 §5.2's names); a condition that some host answers with
 * another wire code keeps a name of its own (CHUNK_RANGE_MISMATCH is sent as the registry's
 * BLOB_UPLOAD_INVALID).
 *
 * `code` survives structured cloning across Piscina worker threads, `instanceof` does not, so
 * callers test `isSlipwayError(e)` / `e.code`.
 */

/** Every engine condition, with what it means. The keys are the codes. */
export const ERROR_CONDITIONS = {
  // registry: the distribution codes of the same name, same meaning
  BLOB_UNKNOWN: 'No blob with that digest is stored, or the repository does not link it.',
  BLOB_UPLOAD_INVALID: 'The upload session can no longer proceed (interrupted, inconsistent, or its id is malformed or taken); start a new one.',
  BLOB_UPLOAD_UNKNOWN: 'No open upload session with that id in the repository.',
  DIGEST_INVALID: 'A digest is malformed, missing, or does not match the content.',
  MANIFEST_BLOB_UNKNOWN: 'A manifest references a blob the repository does not have.',
  MANIFEST_INVALID: 'A manifest, or a manifest reference, is malformed or of a refused type.',
  MANIFEST_UNKNOWN: 'No manifest under that tag or digest in the repository.',
  NAME_INVALID: 'A repository name is malformed or does not name <app>/<process-type>.',
  NAME_UNKNOWN: 'The repository is not known.',
  // registry and blob store conditions that hosts send under other wire codes
  CHUNK_RANGE_MISMATCH: 'An upload chunk does not start at the session\'s offset, or its Content-Range is malformed or disagrees with its length; `detail.offset` is the session\'s offset.',
  BYTE_RANGE_INVALID: 'A blob read was asked for a negative offset or a length below 1 (a caller\'s bug: hosts parse Range headers first).',
  RANGE_NOT_SATISFIABLE: 'A requested range (of a blob\'s bytes, or a page of a list) cannot be served: malformed, or past the end; `detail.size` is the blob\'s size when known.',
  MANIFEST_TOO_LARGE: 'A manifest body is over the 4 MiB limit.',
  UNSUPPORTED_ARCHITECTURE: 'An image is not linux/amd64, the only platform dynos run.',
  PAGINATION_INVALID: 'A list\'s page size (`n`) or continuation point (`last`) is malformed.',
  UPLOAD_BUSY: 'Another request holds the upload session.',
  TOO_SLOW: 'A request body arrived slower than the minimum receive rate and was cut off; `detail.offset` is what was kept.',
  UNAVAILABLE: 'Temporarily out of a server resource; `detail.retryAfter` in seconds.',
  BLOB_STORE_UNAVAILABLE: 'The blob store (S3) refused the connection, did not answer within its timeout (SLIPWAY_S3_TIMEOUT), or answered 5xx; `detail.retryAfter` in seconds. An upload session whose bytes it failed to take was discarded (the message says so); nothing acknowledged was lost.',
  STORAGE_FULL: 'The storage under the data directory (blob files, the embedded metadata database) is full or over its quota (ENOSPC, EDQUOT, LMDB MDB_MAP_FULL); nothing of the failed write was kept (an upload session keeps its acknowledged bytes, or says it was discarded); `detail.retryAfter` in seconds.',
  STORAGE_STALLED: 'The data disk did not complete a write, an fsync or a metadata commit within SLIPWAY_DISK_TIMEOUT (a hung device or network file system); nothing of the request was acknowledged (an upload session keeps its acknowledged bytes, or says it was discarded); `detail.retryAfter` in seconds.',
  STORE_UNAVAILABLE: 'The metadata database cannot be reached (down, restarting, or too slow to answer within the statement timeout), or a write kept conflicting with concurrent writes through every retry; `detail.retryAfter` in seconds. Nothing was changed unless the request is retried and says otherwise.',
  // shared
  METHOD_NOT_ALLOWED: 'The resource does not support the request method; `detail.allow` lists the ones it does.',
  UNAUTHORIZED: 'No valid credentials came with the request.',
  DENIED: 'The caller is known but may not do this.',
  NOT_FOUND: 'The named resource does not exist (or the caller may not know it does); `detail.resource` names its kind.',
  CONFLICT: 'The change clashes with existing data (a taken name, the last admin).',
  INVALID_PARAMS: 'A request parameter has a malformed or out-of-range value.',
  BAD_REQUEST: 'The request itself is malformed (body encoding, repeated or missing parameters) or the client aborted it.',
  BODY_TOO_LARGE: 'A request body is over its limit.',
  RATE_LIMITED: 'The caller used up a budget (API requests, pending logins, upload sessions).',
  NOT_ACCEPTABLE: 'No representation matches the request\'s Accept header.',
  // OAuth (RFC 6749 §5.2 names, same meaning)
  INVALID_CLIENT: 'Client authentication failed.',
  INVALID_GRANT: 'An authorization code or refresh token is invalid, expired, used, or issued to another client.',
  INVALID_SCOPE: 'A requested scope is unknown, empty, or wider than allowed.',
  UNSUPPORTED_GRANT_TYPE: 'The token endpoint does not support that grant_type.',
} as const satisfies Record<string, string>;

/** The code of an engine condition (a key of ERROR_CONDITIONS). */
export type ErrorCode = keyof typeof ERROR_CONDITIONS;

/** Every engine error code, for tests that check a host table covers them all at run time. */
export const ERROR_CODES = Object.keys(ERROR_CONDITIONS) as readonly ErrorCode[];

/** An expected failure with a stable code; `detail` is safe to show to the client. */
export class SlipwayError extends Error {
  readonly code: ErrorCode;
  readonly detail: unknown;
  constructor(code: ErrorCode, message: string, detail?: unknown) {
    super(message);
    this.name = 'SlipwayError';
    this.code = code;
    this.detail = detail;
  }
}

/** True for SlipwayError instances and for their structured clones from worker threads. */
export function isSlipwayError(e: unknown): e is SlipwayError {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'string' &&
    (e as { name?: unknown }).name === 'SlipwayError';
}

/** Shorthand: `throw fail('BLOB_UNKNOWN', 'blob unknown to registry', {digest})`. */
export function fail(code: ErrorCode, message: string, detail?: unknown): SlipwayError {
  return new SlipwayError(code, message, detail);
}
