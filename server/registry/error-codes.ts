/**
 * The registry's one wire table: domain error code → distribution error code and HTTP status
 * (distribution spec "Error Codes"; body `{"errors":[{"code","message","detail"}]}`).
 */
import type { ErrorCode } from '../../engine/errors.js';

export interface WireError {
  code: string;
  status: number;
}

export const REGISTRY_ERRORS: Record<ErrorCode, WireError> = {
  BLOB_UNKNOWN: { code: 'BLOB_UNKNOWN', status: 404 },
  BLOB_UPLOAD_INVALID: { code: 'BLOB_UPLOAD_INVALID', status: 400 },
  BLOB_UPLOAD_UNKNOWN: { code: 'BLOB_UPLOAD_UNKNOWN', status: 404 },
  // An out-of-order chunk: 416 with the current Range (distribution spec "Pushing a blob in chunks").
  RANGE_INVALID: { code: 'BLOB_UPLOAD_INVALID', status: 416 },
  RANGE_NOT_SATISFIABLE: { code: 'RANGE_INVALID', status: 416 },
  DIGEST_INVALID: { code: 'DIGEST_INVALID', status: 400 },
  MANIFEST_BLOB_UNKNOWN: { code: 'MANIFEST_BLOB_UNKNOWN', status: 400 },
  MANIFEST_INVALID: { code: 'MANIFEST_INVALID', status: 400 },
  MANIFEST_UNKNOWN: { code: 'MANIFEST_UNKNOWN', status: 404 },
  MANIFEST_TOO_LARGE: { code: 'SIZE_INVALID', status: 413 },
  // Terminal on purpose: MANIFEST_INVALID would make containers/image retry other formats.
  UNSUPPORTED_ARCHITECTURE: { code: 'DENIED', status: 403 },
  NAME_INVALID: { code: 'NAME_INVALID', status: 400 },
  NAME_UNKNOWN: { code: 'NAME_UNKNOWN', status: 404 },
  SIZE_INVALID: { code: 'SIZE_INVALID', status: 400 },
  PAGINATION_INVALID: { code: 'PAGINATION_NUMBER_INVALID', status: 400 },
  UNSUPPORTED: { code: 'UNSUPPORTED', status: 405 },
  UPLOAD_BUSY: { code: 'BLOB_UPLOAD_INVALID', status: 409 },
  TOO_SLOW: { code: 'BLOB_UPLOAD_INVALID', status: 408 },
  UNAVAILABLE: { code: 'TOOMANYREQUESTS', status: 503 },
  UNAUTHORIZED: { code: 'UNAUTHORIZED', status: 401 },
  DENIED: { code: 'DENIED', status: 403 },
  NOT_FOUND: { code: 'NAME_UNKNOWN', status: 404 },
  CONFLICT: { code: 'DENIED', status: 409 },
  INVALID_PARAMS: { code: 'UNSUPPORTED', status: 400 },
  BAD_REQUEST: { code: 'UNSUPPORTED', status: 400 },
  BODY_TOO_LARGE: { code: 'SIZE_INVALID', status: 413 },
  RATE_LIMITED: { code: 'TOOMANYREQUESTS', status: 429 },
  // OAuth and platform API codes; the registry does not raise them, the rows keep the table exhaustive.
  NOT_ACCEPTABLE: { code: 'UNSUPPORTED', status: 406 },
  INVALID_CLIENT: { code: 'UNAUTHORIZED', status: 401 },
  INVALID_GRANT: { code: 'UNAUTHORIZED', status: 401 },
  INVALID_SCOPE: { code: 'DENIED', status: 403 },
  UNSUPPORTED_GRANT_TYPE: { code: 'UNSUPPORTED', status: 400 },
};
