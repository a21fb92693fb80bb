/**
 * OAuth representations (docs/rules.md Resources 1-2; docs/platform-conventions.md 2.3-2.4).
 * Token values appear only in the response that created them (create, regenerate); later the
 * `token` field carries the redacted form `SVC-**********abcd` (docs/platform-conventions.md 2.2). Client secrets
 * appear only on create and rotate-credentials.
 */
import { isoTime } from '../../engine/clock.js';
import type { Account, AuthorizationRecord, TokenRecord } from '../../engine/identity/records.js';
import type { IssuedTokens } from '../../engine/identity/authorizations.js';
import type { AuthorizationTokens } from '../../engine/oauth/authorizations.js';
import type { ClientRecord } from '../../engine/oauth/records.js';

/**
 * Seconds until `expiresAt` (ms), rounded up (a token created with `expires_in` 3600 answers
 * 3600 in the creating response, though some milliseconds passed), never negative; null for no expiry.
 */
function secondsLeft(expiresAt: number | null, now: number): number | null {
  return expiresAt === null ? null : Math.max(0, Math.ceil((expiresAt - now) / 1000));
}

function tokenJson(rec: TokenRecord | undefined, value: string | undefined, now: number) {
  if (!rec) return null;
  return { expires_in: secondsLeft(rec.expiresAt, now), id: rec.id, token: value ?? rec.hint ?? null };
}

/**
 * The Authorization record.
 * @param issued token values to reveal (create and regenerate only)
 * @param now ms since epoch, for `expires_in`
 */
export function authorizationJson(a: AuthorizationRecord, tokens: AuthorizationTokens, user: Account | undefined, client: ClientRecord | undefined, now: number, issued?: IssuedTokens) {
  return {
    id: a.id,
    description: a.description,
    scope: a.scope,
    access_token: tokenJson(tokens.access, issued?.accessToken.token, now),
    refresh_token: tokenJson(tokens.refresh, issued?.refreshToken?.token, now),
    grant: null,
    client: client ? { id: client.id, name: client.name, redirect_uri: client.redirectUri } : null,
    session: null,
    user: { id: a.accountId, email: user?.email ?? null, full_name: user?.name ?? null },
    created_at: isoTime(a.createdAt),
    updated_at: isoTime(a.updatedAt),
  };
}

/**
 * The Client record; `secret` only when just created or rotated.
 */
export function clientJson(c: ClientRecord, secret?: string) {
  return {
    id: c.id,
    name: c.name,
    redirect_uri: c.redirectUri,
    ...(secret === undefined ? {} : { secret }),
    trusted: c.trusted,
    ignores_delinquent: null,
    created_at: isoTime(c.createdAt),
    updated_at: isoTime(c.updatedAt),
  };
}
