/**
 * The platform API's one wire table: domain error code → `{id, status}` (docs/platform-conventions.md 1.4).
 * Body shape: `{"id": "<id>", "message": "<text>"}`.
 */
import type { ErrorCode } from '../../engine/errors.js';

export interface ApiWireError {
  id: string;
  status: number;
}

const notFound = { id: 'not_found', status: 404 };
const invalid = { id: 'invalid_params', status: 422 };

export const API_ERRORS: Record<ErrorCode, ApiWireError> = {
  BLOB_UNKNOWN: notFound,
  BLOB_UPLOAD_INVALID: invalid,
  BLOB_UPLOAD_UNKNOWN: notFound,
  RANGE_INVALID: { id: 'requested_range_not_satisfiable', status: 416 },
  RANGE_NOT_SATISFIABLE: { id: 'requested_range_not_satisfiable', status: 416 },
  DIGEST_INVALID: invalid,
  MANIFEST_BLOB_UNKNOWN: invalid,
  MANIFEST_INVALID: invalid,
  MANIFEST_UNKNOWN: notFound,
  MANIFEST_TOO_LARGE: { id: 'bad_request', status: 413 },
  UNSUPPORTED_ARCHITECTURE: invalid,
  NAME_INVALID: invalid,
  NAME_UNKNOWN: notFound,
  SIZE_INVALID: invalid,
  PAGINATION_INVALID: { id: 'requested_range_not_satisfiable', status: 416 },
  UNSUPPORTED: { id: 'method_not_allowed', status: 405 },
  UPLOAD_BUSY: { id: 'conflict', status: 409 },
  TOO_SLOW: { id: 'request_timeout', status: 408 },
  UNAVAILABLE: { id: 'unavailable', status: 503 },
  UNAUTHORIZED: { id: 'unauthorized', status: 401 },
  DENIED: { id: 'forbidden', status: 403 },
  NOT_FOUND: notFound,
  CONFLICT: { id: 'conflict', status: 409 },
  INVALID_PARAMS: invalid,
  BAD_REQUEST: { id: 'bad_request', status: 400 },
  BODY_TOO_LARGE: { id: 'bad_request', status: 413 },
  RATE_LIMITED: { id: 'rate_limit', status: 429 },
  NOT_ACCEPTABLE: { id: 'not_acceptable', status: 406 },
  INVALID_CLIENT: { id: 'unauthorized', status: 401 },
  INVALID_GRANT: { id: 'bad_request', status: 400 },
  INVALID_SCOPE: invalid,
  UNSUPPORTED_GRANT_TYPE: { id: 'bad_request', status: 400 },
};
