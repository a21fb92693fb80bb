/**
 * The token endpoint, POST /oauth/token (docs/rules.md Endpoints 2-3; RFC 6749 §3.2, §4.1.3, §6):
 * form-encoded; client authentication by `client_secret` in the body or HTTP Basic
 * (`client_id:client_secret`, each form-encoded, RFC 6749 §2.3.1), never both.
 *   authorization_code → 200 {access_token, expires_in, refresh_token, token_type, user_id, session_nonce}
 *   refresh_token      → 201, same shape (the refresh token again), with ETag, Last-Modified and
 *                        RateLimit-Remaining; takes one token from the account's API pool.
 * `expires_in` is the whole seconds left minus one (28799 for a new 8-hour token, as the spec
 * documents), so a client never believes in a token for a second longer than we do.
 */
import type { Exchange } from '../http/exchange.js';
import type { AuthContext } from './context.js';
import { field, readForm } from './forms.js';
import { noStore, sendOAuthError } from './oauth-errors.js';
import { etagOf } from '../api/respond.js';
import { fail } from '../../engine/errors.js';
import { resolveToken } from '../../engine/identity/authorization-queries.js';
import type { ClientCredentials } from '../../engine/oauth/client-auth.js';
import type { GrantResult } from '../../engine/oauth/authorization-codes.js';
import { refreshAccessToken } from '../../engine/oauth/refresh.js';

function formDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    throw fail('INVALID_CLIENT', 'Malformed HTTP Basic client credentials.');
  }
}

/**
 * The client credentials of a token request.
 * @throws BAD_REQUEST when both Basic and client_secret are sent, or the client ids disagree;
 *         INVALID_CLIENT for another Authorization scheme or malformed Basic credentials.
 */
export function clientCredentials(ex: Exchange, form: URLSearchParams): ClientCredentials {
  const formId = field(form, 'client_id');
  const formSecret = field(form, 'client_secret');
  const h = ex.header('authorization');
  if (!h) return { clientId: formId || null, secret: formSecret };
  const space = h.indexOf(' ');
  if (space < 0 || h.slice(0, space).toLowerCase() !== 'basic') throw fail('INVALID_CLIENT', 'Client authentication must use HTTP Basic or client_secret in the body.');
  const decoded = Buffer.from(h.slice(space + 1).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw fail('INVALID_CLIENT', 'Malformed HTTP Basic client credentials.');
  if (formSecret !== null) throw fail('BAD_REQUEST', 'Use one client authentication method: HTTP Basic or client_secret in the body, not both.');
  const id = formDecode(decoded.slice(0, colon));
  if (formId && id && formId !== id) throw fail('BAD_REQUEST', 'client_id in the body differs from the one in HTTP Basic.');
  return { clientId: id || formId || null, secret: formDecode(decoded.slice(colon + 1)) };
}

function tokenBody(result: GrantResult, refreshToken: string, now: number) {
  const { issued } = result;
  const expiresAt = issued.accessToken.expiresAt;
  return {
    access_token: issued.accessToken.token,
    expires_in: expiresAt === null ? null : Math.max(0, Math.ceil((expiresAt - now) / 1000) - 1),
    refresh_token: refreshToken,
    token_type: 'Bearer',
    user_id: issued.record.accountId,
    session_nonce: result.sessionNonce,
  };
}

function required(form: URLSearchParams, name: string): string {
  const v = field(form, name);
  if (!v) throw fail('BAD_REQUEST', `${name} is required.`);
  return v;
}

async function authorizationCode(ctx: AuthContext, ex: Exchange, form: URLSearchParams): Promise<void> {
  const result = await ctx.oauth.authorizationCodes.exchange({
    code: required(form, 'code'),
    credentials: clientCredentials(ex, form),
    redirectUri: field(form, 'redirect_uri'),
    codeVerifier: field(form, 'code_verifier'),
  });
  const text = JSON.stringify(tokenBody(result, result.issued.refreshToken!.token, ctx.clock.now()));
  ctx.log.info({ reqId: ex.id, accountId: result.issued.record.accountId, authorizationId: result.issued.record.id }, 'code exchanged');
  ex.send(200, noStore(ex), text, Buffer.byteLength(text));
}

async function refreshToken(ctx: AuthContext, ex: Exchange, form: URLSearchParams): Promise<void> {
  const value = required(form, 'refresh_token');
  const credentials = clientCredentials(ex, form);
  // Rate limit before any write: the pool is the account's (docs/platform-conventions.md 1.6).
  const accountId = (await resolveToken(ctx.store.metadata, value))?.authorization?.accountId;
  let remaining: number | null = null;
  if (accountId) {
    const state = await ctx.rateLimiter.take(accountId);
    remaining = state.remaining;
    if (!state.ok) {
      return sendOAuthError(ex, ctx.log, fail('RATE_LIMITED', 'Your account reached the API rate limit. Please wait a few minutes before making new requests.'), { 'ratelimit-remaining': '0' });
    }
  }
  const scope = field(form, 'scope');
  const result = await refreshAccessToken(ctx.store.metadata, ctx.clock, ctx.oauth.clients, { refreshToken: value, credentials, scope: scope && scope.trim() ? scope : null });
  const now = ctx.clock.now();
  const text = JSON.stringify(tokenBody(result, value, now));
  ex.send(201, {
    ...noStore(ex),
    etag: etagOf(text),
    'last-modified': new Date(result.issued.record.updatedAt).toUTCString(),
    'ratelimit-remaining': String(remaining ?? 0),
  }, text, Buffer.byteLength(text));
}

/** POST /oauth/token; every failure is an RFC 6749 §5.2 error. */
export async function handleToken(ctx: AuthContext, ex: Exchange): Promise<void> {
  try {
    if (ex.method !== 'POST') throw fail('METHOD_NOT_ALLOWED', 'The token endpoint accepts POST only.');
    const form = await readForm(ex);
    const grantType = field(form, 'grant_type');
    if (grantType === 'authorization_code') return await authorizationCode(ctx, ex, form);
    if (grantType === 'refresh_token') return await refreshToken(ctx, ex, form);
    if (!grantType) throw fail('BAD_REQUEST', 'grant_type is required: authorization_code or refresh_token.');
    throw fail('UNSUPPORTED_GRANT_TYPE', `grant_type "${grantType.slice(0, 60)}" is not supported; use authorization_code or refresh_token.`);
  } catch (e) {
    sendOAuthError(ex, ctx.log, e);
  }
}
