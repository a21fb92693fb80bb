/**
 * The auth host's HTML error table: engine condition → HTTP status and the heading of the error
 * page (docs/architecture.md "Errors"). Used for failures that escape a page handler
 * (`sendAuthError`) and for the status of a dashboard form refused with a field error. The
 * page's message is the SlipwayError's message.
 */
import type { ErrorTable } from '../http/error-table.js';

/** A row of the page table: the status, the page's heading and what the page tells the user. */
export interface PageErrorDescriptor {
  readonly status: number;
  readonly heading: string;
  readonly description: string;
}

const page = (status: number): PageErrorDescriptor =>
  status === 404
    ? { status, heading: 'Not found', description: 'the page or what it names does not exist' }
    : { status, heading: 'Request refused', description: 'the request was understood and refused; the message says why' };

const notFound = page(404);
const invalid = page(422);
const rangeRefused = page(416);

/** Every engine condition → the status and heading of the auth host's error page. */
export const PAGE_ERRORS: ErrorTable<PageErrorDescriptor> = {
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
  MANIFEST_TOO_LARGE: page(413),
  UNSUPPORTED_ARCHITECTURE: invalid,
  PAGINATION_INVALID: rangeRefused,
  UPLOAD_BUSY: page(409),
  TOO_SLOW: page(408),
  UNAVAILABLE: page(503),
  STORE_UNAVAILABLE: page(503),
  BLOB_STORE_UNAVAILABLE: page(503),
  STORAGE_FULL: page(507),
  STORAGE_STALLED: page(503),
  METHOD_NOT_ALLOWED: page(405),
  UNAUTHORIZED: page(401),
  DENIED: page(403),
  NOT_FOUND: notFound,
  CONFLICT: page(409),
  INVALID_PARAMS: invalid,
  BAD_REQUEST: page(400),
  BODY_TOO_LARGE: page(413),
  RATE_LIMITED: page(429),
  NOT_ACCEPTABLE: page(406),
  INVALID_CLIENT: page(401),
  INVALID_GRANT: page(400),
  INVALID_SCOPE: invalid,
  UNSUPPORTED_GRANT_TYPE: page(400),
};
