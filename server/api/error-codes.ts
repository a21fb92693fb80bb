/**
 * The platform API's one error table: engine condition → `{id, status}` (docs/platform-conventions.md
 * 1.4, docs/architecture.md "Errors"). Body shape: `{"id": "<id>", "message": "<text>"}`; the
 * CLI login endpoints of the auth host answer in the same shape from this table.
 */
import type { ErrorDescriptor, ErrorTable } from '../http/error-table.js';

/** What each API error id (the row's `code`) tells the client. */
const MEANING = {
  not_found: 'the resource does not exist or is not visible to the caller',
  invalid_params: 'a parameter of the request is invalid',
  requested_range_not_satisfiable: 'the Range header cannot be served',
  bad_request: 'the request is malformed or too large',
  method_not_allowed: 'the resource does not support this method (see Allow)',
  conflict: 'the change conflicts with the current state',
  request_timeout: 'the request body arrived too slowly',
  unavailable: 'temporarily unavailable; retry later',
  unauthorized: 'no valid credentials were provided',
  forbidden: 'the credentials do not allow this request',
  rate_limit: 'the account reached its rate limit',
  not_acceptable: 'no representation matches the Accept header',
} as const;

type ApiId = keyof typeof MEANING;

const row = (id: ApiId, status: number): ErrorDescriptor => ({ code: id, status, description: MEANING[id] });

const notFound = row('not_found', 404);
const invalid = row('invalid_params', 422);
const rangeRefused = row('requested_range_not_satisfiable', 416);

/** Every engine condition → its API error `id` (the row's `code`) and status. */
export const API_ERRORS: ErrorTable = {
  BLOB_UNKNOWN: notFound,
  BLOB_UPLOAD_INVALID: invalid,
  BLOB_UPLOAD_UNKNOWN: notFound,
  DIGEST_INVALID: invalid,
  MANIFEST_BLOB_UNKNOWN: invalid,
  MANIFEST_INVALID: invalid,
  MANIFEST_UNKNOWN: notFound,
  NAME_INVALID: invalid,
  NAME_UNKNOWN: notFound,
  CHUNK_RANGE_MISMATCH: rangeRefused,
  BYTE_RANGE_INVALID: rangeRefused,
  RANGE_NOT_SATISFIABLE: rangeRefused,
  MANIFEST_TOO_LARGE: row('bad_request', 413),
  UNSUPPORTED_ARCHITECTURE: invalid,
  PAGINATION_INVALID: rangeRefused,
  UPLOAD_BUSY: row('conflict', 409),
  TOO_SLOW: row('request_timeout', 408),
  UNAVAILABLE: row('unavailable', 503),
  STORE_UNAVAILABLE: row('unavailable', 503),
  BLOB_STORE_UNAVAILABLE: row('unavailable', 503),
  STORAGE_FULL: row('unavailable', 507),
  STORAGE_STALLED: row('unavailable', 503),
  METHOD_NOT_ALLOWED: row('method_not_allowed', 405),
  UNAUTHORIZED: row('unauthorized', 401),
  DENIED: row('forbidden', 403),
  NOT_FOUND: notFound,
  CONFLICT: row('conflict', 409),
  INVALID_PARAMS: invalid,
  BAD_REQUEST: row('bad_request', 400),
  BODY_TOO_LARGE: row('bad_request', 413),
  RATE_LIMITED: row('rate_limit', 429),
  NOT_ACCEPTABLE: row('not_acceptable', 406),
  INVALID_CLIENT: row('unauthorized', 401),
  INVALID_GRANT: row('bad_request', 400),
  INVALID_SCOPE: invalid,
  UNSUPPORTED_GRANT_TYPE: row('bad_request', 400),
};
