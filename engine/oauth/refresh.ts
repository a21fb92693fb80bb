/**
 * The refresh_token grant (RFC 6749 §6; docs/rules.md Endpoints 3): a web-flow refresh token and the
 * client's secret yield a new 8-hour access token; the refresh token itself stays the same and
 * does not expire (docs/rules.md Authentication 3). The previous access token stops working in the same
 * transaction, so an authorization has one live access token at a time.
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { refreshAccessTokenInTransaction } from '../identity/authorizations.js';
import { resolveToken } from '../identity/authorization-queries.js';
import { parseScopeParam } from '../identity/scope.js';
import type { Clients } from './clients.js';
import { authenticateClientFor, type ClientCredentials } from './client-auth.js';
import { WEB_ACCESS_TOKEN_TTL_MS } from './limits.js';
import type { GrantResult } from './authorization-codes.js';

/** Input of a refresh_token grant. */
export interface RefreshRequest {
  refreshToken: string;
  credentials: ClientCredentials;
  /**
   * `scope` of the request, or null when absent or empty. RFC 6749 §6 allows narrowing; our
   * scopes belong to the authorization, so only the same set is accepted (our decision).
   */
  scope: string | null;
}

const INVALID = 'The refresh token is invalid or its authorization was revoked.';

/**
 * Issues a new access token for a refresh token.
 * @throws INVALID_GRANT for an unknown, revoked or non-web-flow refresh token, or one issued to
 *         another client; INVALID_CLIENT when client authentication fails; INVALID_SCOPE when
 *         `scope` differs from the authorization's.
 */
export async function refreshAccessToken(metadata: MetadataStore, clock: Clock, clients: Clients, req: RefreshRequest): Promise<GrantResult & { accountId: string }> {
  const resolved = await resolveToken(metadata, req.refreshToken);
  if (!resolved || resolved.token.kind !== 'refresh') throw fail('INVALID_GRANT', INVALID);
  const auth = resolved.authorization;
  if (!auth || auth.revokedAt !== null || auth.clientId === null) throw fail('INVALID_GRANT', INVALID);
  const now = clock.now();
  if (auth.expiresAt !== null && now >= auth.expiresAt) throw fail('INVALID_GRANT', 'The authorization has expired.');
  await authenticateClientFor(clients, req.credentials, auth.clientId);
  if (req.scope !== null) {
    const asked = parseScopeParam(req.scope);
    if (asked.length !== auth.scope.length || asked.some((s) => !auth.scope.includes(s))) {
      throw fail('INVALID_SCOPE', `A refresh keeps the authorization's scope (${auth.scope.join(' ')}); omit scope or send the same set.`);
    }
  }
  const issued = await metadata.transact((tx) => refreshAccessTokenInTransaction(tx, auth.id, resolved.hash, WEB_ACCESS_TOKEN_TTL_MS, now));
  if (!issued) throw fail('INVALID_GRANT', INVALID);
  return { issued, sessionNonce: auth.sessionNonce ?? null, accountId: auth.accountId };
}
