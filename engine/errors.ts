/**
 * Domain errors of the engine. They carry a stable `code` and a human message, never an HTTP
 * status: each front door (registry, platform API, auth host) maps codes to its own wire format
 * in exactly one table (server/registry/error-codes.ts, server/api/error-codes.ts).
 *
 * `code` survives structured cloning across Piscina worker threads, `instanceof` does not, so
 * callers test `isSlipwayError(e)` / `e.code`.
 */
export type ErrorCode =
  // registry (names follow the distribution spec's error codes)
  | 'BLOB_UNKNOWN'
  | 'BLOB_UPLOAD_INVALID'
  | 'BLOB_UPLOAD_UNKNOWN'
  | 'RANGE_INVALID'
  | 'RANGE_NOT_SATISFIABLE'
  | 'DIGEST_INVALID'
  | 'MANIFEST_BLOB_UNKNOWN'
  | 'MANIFEST_INVALID'
  | 'MANIFEST_UNKNOWN'
  | 'MANIFEST_TOO_LARGE'
  | 'UNSUPPORTED_ARCHITECTURE'
  | 'NAME_INVALID'
  | 'NAME_UNKNOWN'
  | 'SIZE_INVALID'
  | 'PAGINATION_INVALID'
  | 'UNSUPPORTED'
  /** Another request holds the upload session (409). */
  | 'UPLOAD_BUSY'
  /** A request body arrived slower than the minimum receive rate and was cut off (408). */
  | 'TOO_SLOW'
  /** Temporarily out of a server resource; `detail.retryAfter` in seconds (503). */
  | 'UNAVAILABLE'
  // shared
  | 'UNAUTHORIZED'
  | 'DENIED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'INVALID_PARAMS'
  | 'BAD_REQUEST'
  | 'BODY_TOO_LARGE'
  | 'RATE_LIMITED'
  // platform API conventions and OAuth (RFC 6749 §5.2 names)
  | 'NOT_ACCEPTABLE'
  | 'INVALID_CLIENT'
  | 'INVALID_GRANT'
  | 'INVALID_SCOPE'
  | 'UNSUPPORTED_GRANT_TYPE';

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
