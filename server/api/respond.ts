/** Platform API request/response conventions: JSON bodies, Request-Id, `{id, message}` errors. */
import type { Exchange } from '../http/exchange.js';
import type { ApiContext } from './context.js';
import { fail, isSlipwayError } from '../../engine/errors.js';
import { API_ERRORS } from './error-codes.js';
import { sendJson } from '../http/respond.js';

/** Largest JSON request body (bytes). */
export const MAX_JSON_BODY = 1024 * 1024;

/**
 * Reads a JSON object body; an empty body is `{}`.
 * @throws BAD_REQUEST for malformed JSON or a non-object, BODY_TOO_LARGE past 1 MiB.
 */
export async function readJson(ex: Exchange): Promise<Record<string, unknown>> {
  const raw = await ex.body(MAX_JSON_BODY);
  if (raw.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw fail('BAD_REQUEST', `Request body is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw fail('BAD_REQUEST', 'Request body must be a JSON object.');
  return v as Record<string, unknown>;
}

/** Sends a platform API response with the common headers. */
export function sendApi(_ctx: ApiContext, ex: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJson(ex, status, body, { 'request-id': ex.id, ...headers });
}

/** Sends `{id, message}` for an error; unknown errors are logged and hidden. */
export function sendApiError(ctx: ApiContext, ex: Exchange, e: unknown): void {
  if (ex.responded || ex.aborted) return;
  if (!isSlipwayError(e)) {
    ctx.log.error({ err: e, reqId: ex.id, path: ex.path }, 'api request failed');
    return sendApi(ctx, ex, 500, { id: 'internal_server_error', message: `Internal server error (request ${ex.id}).` });
  }
  const wire = API_ERRORS[e.code];
  const extra = typeof e.detail === 'object' && e.detail !== null && 'resource' in e.detail ? { resource: (e.detail as { resource: string }).resource } : {};
  sendApi(ctx, ex, wire.status, { id: wire.id, message: e.message, ...extra });
}
