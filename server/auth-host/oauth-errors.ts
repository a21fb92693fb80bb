/**
 * The token endpoint's error table: engine condition → RFC 6749 §5.2 `error` and HTTP status
 * (docs/architecture.md "Errors"). Body `{"error", "error_description"}` (the description is the
 * SlipwayError's message), always with `Cache-Control: no-store` (RFC 6749 §5.1). Conditions
 * that are not about the client, the grant or the scope are request errors (`invalid_request`,
 * 400, or the status that says more); anything that is not a SlipwayError is logged and answered
 * `server_error` (500) without detail.
 */
import { isSlipwayError } from '../../engine/errors.js';
import type { Exchange } from '../http/exchange.js';
import type { ErrorDescriptor, ErrorTable } from '../http/error-table.js';
import type { Logger } from '../log.js';

/** What each RFC 6749 §5.2 `error` (the row's `code`) tells the client. */
const MEANING = {
  invalid_request: 'the request is missing a parameter, repeats one, or is otherwise malformed',
  invalid_client: 'client authentication failed',
  invalid_grant: 'the authorization code or refresh token is invalid, expired, revoked, or was issued to another client',
  invalid_scope: 'the requested scope is invalid, unknown, or exceeds the grant',
  unsupported_grant_type: 'the grant type is not supported',
  rate_limit: 'the account reached its rate limit',
  temporarily_unavailable: 'the server cannot answer right now (its database is unavailable); retry shortly',
} as const;

type OAuthError = keyof typeof MEANING;

const row = (error: OAuthError, status: number): ErrorDescriptor => ({ code: error, status, description: MEANING[error] });

const invalidRequest = row('invalid_request', 400);

/** Every engine condition → its RFC 6749 §5.2 `error` (the row's `code`) and status at the token endpoint. */
export const OAUTH_ERRORS: ErrorTable = {
  INVALID_CLIENT: row('invalid_client', 401),
  INVALID_GRANT: row('invalid_grant', 400),
  INVALID_SCOPE: row('invalid_scope', 400),
  UNSUPPORTED_GRANT_TYPE: row('unsupported_grant_type', 400),
  BODY_TOO_LARGE: row('invalid_request', 413),
  METHOD_NOT_ALLOWED: row('invalid_request', 405),
  RATE_LIMITED: row('rate_limit', 429),
  // The rest are request errors to an OAuth client.
  BAD_REQUEST: invalidRequest,
  INVALID_PARAMS: invalidRequest,
  UNAUTHORIZED: invalidRequest,
  DENIED: invalidRequest,
  NOT_FOUND: invalidRequest,
  CONFLICT: invalidRequest,
  NOT_ACCEPTABLE: invalidRequest,
  TOO_SLOW: invalidRequest,
  UNAVAILABLE: invalidRequest,
  // RFC 6749 §4.1.2.1's name for a server that cannot answer for now, with 503 (RFC 9110).
  STORE_UNAVAILABLE: row('temporarily_unavailable', 503),
  BLOB_STORE_UNAVAILABLE: row('temporarily_unavailable', 503),
  // The same name for a server that cannot store what the request needs, with 507 (RFC 4918 §11.5).
  STORAGE_FULL: row('temporarily_unavailable', 507),
  STORAGE_STALLED: row('temporarily_unavailable', 503),
  // Registry conditions; the token endpoint does not raise them, the rows keep the table complete.
  BLOB_UNKNOWN: invalidRequest,
  BLOB_UPLOAD_INVALID: invalidRequest,
  BLOB_UPLOAD_UNKNOWN: invalidRequest,
  DIGEST_INVALID: invalidRequest,
  MANIFEST_BLOB_UNKNOWN: invalidRequest,
  MANIFEST_INVALID: invalidRequest,
  MANIFEST_UNKNOWN: invalidRequest,
  NAME_INVALID: invalidRequest,
  NAME_UNKNOWN: invalidRequest,
  CHUNK_RANGE_MISMATCH: invalidRequest,
  BYTE_RANGE_INVALID: invalidRequest,
  RANGE_NOT_SATISFIABLE: invalidRequest,
  MANIFEST_TOO_LARGE: invalidRequest,
  UNSUPPORTED_ARCHITECTURE: invalidRequest,
  PAGINATION_INVALID: invalidRequest,
  UPLOAD_BUSY: invalidRequest,
};

/** Content type of every token endpoint body, exactly as the spec shows it (Endpoints 2). */
export const TOKEN_CONTENT_TYPE = 'application/json;charset=utf-8';

/** Headers every token endpoint response carries (RFC 6749 §5.1). */
export function noStore(ex: Exchange): Record<string, string> {
  return { 'content-type': TOKEN_CONTENT_TYPE, 'cache-control': 'no-store', pragma: 'no-cache', 'request-id': ex.id };
}

/** Sends an RFC 6749 §5.2 error for `e`. */
export function sendOAuthError(ex: Exchange, log: Logger, e: unknown, extraHeaders: Record<string, string> = {}): void {
  if (ex.responded || ex.aborted) return;
  let wire = { code: 'server_error', status: 500 };
  let description = `Internal server error (request ${ex.id}).`;
  if (isSlipwayError(e)) {
    wire = OAUTH_ERRORS[e.code];
    description = e.message;
  } else {
    log.error({ err: e, reqId: ex.id, path: ex.path }, 'token request failed');
  }
  const headers = { ...noStore(ex), ...extraHeaders };
  // RFC 6749 §5.2: invalid_client answered with 401 names the scheme to use.
  if (wire.status === 401) headers['www-authenticate'] = 'Basic realm="slipway", charset="UTF-8"';
  if (wire.status === 405) headers.allow = 'POST';
  const retryAfter = isSlipwayError(e) ? (e.detail as { retryAfter?: unknown } | undefined)?.retryAfter : undefined;
  if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
  const text = JSON.stringify({ error: wire.code, error_description: description });
  ex.send(wire.status, headers, text, Buffer.byteLength(text));
}
