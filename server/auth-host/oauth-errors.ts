/**
 * The token endpoint's wire table: domain error code → RFC 6749 §5.2 `error` and HTTP status.
 * Body `{"error", "error_description"}`, always with `Cache-Control: no-store` (RFC 6749 §5.1).
 * Codes without a row are request errors (`invalid_request`, 400); anything that is not a
 * SlipwayError is logged and answered `server_error` (500) without detail.
 */
import type { ErrorCode } from '../../engine/errors.js';
import { isSlipwayError } from '../../engine/errors.js';
import type { Exchange } from '../http/exchange.js';
import type { Logger } from '../log.js';

interface OAuthWireError {
  error: string;
  status: number;
}

const OAUTH_ERRORS: Partial<Record<ErrorCode, OAuthWireError>> = {
  INVALID_CLIENT: { error: 'invalid_client', status: 401 },
  INVALID_GRANT: { error: 'invalid_grant', status: 400 },
  INVALID_SCOPE: { error: 'invalid_scope', status: 400 },
  UNSUPPORTED_GRANT_TYPE: { error: 'unsupported_grant_type', status: 400 },
  BODY_TOO_LARGE: { error: 'invalid_request', status: 413 },
  UNSUPPORTED: { error: 'invalid_request', status: 405 },
  RATE_LIMITED: { error: 'rate_limit', status: 429 },
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
  let wire: OAuthWireError = { error: 'server_error', status: 500 };
  let description = `Internal server error (request ${ex.id}).`;
  if (isSlipwayError(e)) {
    wire = OAUTH_ERRORS[e.code] ?? { error: 'invalid_request', status: 400 };
    description = e.message;
  } else {
    log.error({ err: e, reqId: ex.id, path: ex.path }, 'token request failed');
  }
  const headers = { ...noStore(ex), ...extraHeaders };
  // RFC 6749 §5.2: invalid_client answered with 401 names the scheme to use.
  if (wire.status === 401) headers['www-authenticate'] = 'Basic realm="slipway", charset="UTF-8"';
  if (wire.status === 405) headers.allow = 'POST';
  const text = JSON.stringify({ error: wire.error, error_description: description });
  ex.send(wire.status, headers, text, Buffer.byteLength(text));
}
