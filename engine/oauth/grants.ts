/**
 * Authorization codes (RFC 6749 §4.1): issued by the authorize endpoint after consent,
 * exchanged once at the token endpoint for a web-flow authorization with an 8-hour access
 * token and a refresh token (docs/rules.md Endpoints 1-2). Codes are stored only as sha256 hashes.
 * A second exchange of the same code is refused and revokes what the first one issued
 * (RFC 6749 §4.1.2, §10.5).
 */
import type { Store } from '../store.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { hashToken, newId, newSecret } from '../identity/tokens.js';
import { createAuthorizationInTransaction, revokeAuthorizationByIdInTransaction, type IssuedTokens } from '../identity/authorizations.js';
import { grants } from './keyspaces.js';
import type { Clients } from './clients.js';
import type { GrantRecord } from './records.js';
import { authenticateClientFor, type ClientCredentials } from './client-auth.js';
import { verifyS256 } from './pkce.js';
import { GRANT_CODE_TTL_MS, GRANT_REPLAY_MEMORY_MS, WEB_ACCESS_TOKEN_TTL_MS } from './limits.js';
import type { AuthorizationRecord } from '../identity/records.js';
import { announceAuthorization } from './announce.js';

/** What the user approved on the consent page: the fields of the grant it becomes. */
export type CodeRequest = Pick<GrantRecord, 'clientId' | 'accountId' | 'teamId' | 'scope' | 'redirectUri' | 'redirectUriGiven' | 'codeChallenge'>;

/** Input of an authorization_code grant (RFC 6749 §4.1.3). */
export interface CodeExchange {
  code: string;
  credentials: ClientCredentials;
  /** `redirect_uri` of the token request, or null when absent. */
  redirectUri: string | null;
  /** PKCE `code_verifier`, or null when absent. */
  codeVerifier: string | null;
}

/** Tokens of a successful grant, for the token response. */
export interface GrantResult {
  issued: IssuedTokens;
  sessionNonce: string | null;
}

export class Grants {
  constructor(readonly store: Store, readonly clock: Clock, readonly clients: Clients) {}

  /**
   * Issues a single-use code valid for `GRANT_CODE_TTL_MS` (5 minutes).
   * @returns the code value (43 URL-safe characters), shown only in the redirect.
   */
  async issueCode(req: CodeRequest): Promise<string> {
    const code = newSecret();
    const now = this.clock.now();
    const grant: GrantRecord = { id: newId(), ...req, createdAt: now, expiresAt: now + GRANT_CODE_TTL_MS, usedAt: null, authorizationId: null };
    await this.store.env.transaction(() => this.store.grants.put(hashToken(code), grant));
    return code;
  }

  /**
   * Exchanges a code for tokens.
   * @throws INVALID_GRANT for an unknown, expired or already used code (a reuse also revokes
   *         the authorization the first use created), a redirect_uri that does not match, or a
   *         failed PKCE check; INVALID_CLIENT when client authentication fails.
   */
  async exchangeCode(input: CodeExchange): Promise<GrantResult> {
    const now = this.clock.now();
    const codeHash = hashToken(input.code);
    const grant = this.store.grants.get(codeHash);
    if (!grant || (grant.usedAt === null && now >= grant.expiresAt)) throw fail('INVALID_GRANT', 'The authorization code is invalid or expired.');
    if (grant.usedAt !== null) {
      const revoked = grant.authorizationId ? await this.store.metadata.transact((tx) => revokeAuthorizationByIdInTransaction(tx, grant.authorizationId!, now)) : undefined;
      if (revoked) announceAuthorization('revoked', revoked);
      throw fail('INVALID_GRANT', 'The authorization code was already used; the tokens issued for it have been revoked.');
    }
    const client = authenticateClientFor(this.clients, input.credentials, grant.clientId);
    if (grant.redirectUriGiven ? input.redirectUri !== grant.redirectUri : input.redirectUri !== null && input.redirectUri !== grant.redirectUri) {
      throw fail('INVALID_GRANT', 'redirect_uri does not match the one of the authorization request.');
    }
    if (grant.codeChallenge !== null) {
      if (input.codeVerifier === null) throw fail('INVALID_GRANT', 'code_verifier is required: the authorization request carried a code_challenge.');
      if (!verifyS256(input.codeVerifier, grant.codeChallenge)) throw fail('INVALID_GRANT', 'code_verifier does not match the code_challenge.');
    } else if (input.codeVerifier !== null) {
      throw fail('INVALID_GRANT', 'code_verifier was sent but the authorization request carried no code_challenge.');
    }
    // Re-read inside the write transaction: of two concurrent exchanges only one succeeds.
    const outcome = await this.store.metadata.transact(async (tx): Promise<GrantResult | { replayRevoked: AuthorizationRecord | undefined } | 'gone'> => {
      const current = await tx.get(grants, codeHash);
      if (!current) return 'gone';
      if (current.usedAt !== null) {
        return { replayRevoked: current.authorizationId ? await revokeAuthorizationByIdInTransaction(tx, current.authorizationId, now) : undefined };
      }
      const sessionNonce = newSecret();
      const issued = createAuthorizationInTransaction(tx, {
        kind: 'web', accountId: current.accountId, teamId: current.teamId, clientId: client.id, description: client.name,
        scope: current.scope, accessTokenTtlMs: WEB_ACCESS_TOKEN_TTL_MS, withRefreshToken: true, sessionNonce,
      }, now);
      tx.put(grants, codeHash, { ...current, usedAt: now, authorizationId: issued.record.id });
      return { issued, sessionNonce };
    });
    if (outcome === 'gone') throw fail('INVALID_GRANT', 'The authorization code is invalid or expired.');
    if ('replayRevoked' in outcome) {
      if (outcome.replayRevoked) announceAuthorization('revoked', outcome.replayRevoked);
      throw fail('INVALID_GRANT', 'The authorization code was already used; the tokens issued for it have been revoked.');
    }
    announceAuthorization('created', outcome.issued.record);
    return outcome;
  }

  /**
   * Deletes expired unused codes and used codes older than `GRANT_REPLAY_MEMORY_MS` (24 h).
   * @returns the number deleted.
   */
  async prune(): Promise<number> {
    const now = this.clock.now();
    let n = 0;
    await this.store.env.transaction(() => {
      for (const { key, value } of this.store.grants.getRange()) {
        const stale = value.usedAt === null ? now >= value.expiresAt : now >= value.createdAt + GRANT_REPLAY_MEMORY_MS;
        if (stale) {
          this.store.grants.remove(key);
          n++;
        }
      }
    });
    return n;
  }
}
