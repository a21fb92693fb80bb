/**
 * Authorization codes (RFC 6749 §4.1): issued by the authorize endpoint after consent,
 * exchanged once at the token endpoint for a web-flow authorization with an 8-hour access
 * token and a refresh token (docs/rules.md Endpoints 1-2). Codes are stored only as sha256 hashes
 * (keyspace `authorization-codes`, docs/storage.md). A second exchange of the same code is
 * refused and revokes what the first one issued (RFC 6749 §4.1.2, §10.5).
 *
 * Single use: marking a code used and creating its authorization happen in one serializable
 * transaction that re-reads the code, so of two concurrent exchanges exactly one succeeds.
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { hashToken, newId, newSecret } from '../identity/tokens.js';
import { createAuthorizationInTransaction, revokeAuthorizationByIdInTransaction, type IssuedTokens } from '../identity/authorizations.js';
import type { AuthorizationRecord } from '../identity/records.js';
import { findClient, type Clients } from './clients.js';
import type { AuthorizationCodeRecord } from './records.js';
import { authorizationCodes } from './keyspaces.js';
import { authenticateClientFor, type ClientCredentials } from './client-auth.js';
import { verifyS256 } from './pkce.js';
import { AUTHORIZATION_CODE_REPLAY_MEMORY_MS, AUTHORIZATION_CODE_TTL_MS, WEB_ACCESS_TOKEN_TTL_MS } from './limits.js';
import { announceAuthorization } from './announce.js';
import { pruneKeyspace } from './prune.js';

/** What the user approved on the consent page: the fields of the authorization code it becomes. */
export type CodeRequest = Pick<AuthorizationCodeRecord, 'clientId' | 'accountId' | 'teamId' | 'scope' | 'redirectUri' | 'redirectUriGiven' | 'codeChallenge'>;

/** Input of an authorization_code grant (RFC 6749 §4.1.3). */
export interface CodeExchange {
  code: string;
  credentials: ClientCredentials;
  /** `redirect_uri` of the token request, or null when absent. */
  redirectUri: string | null;
  /** PKCE `code_verifier`, or null when absent. */
  codeVerifier: string | null;
}

/** Tokens of a successful grant (code exchange or refresh), for the token response. */
export interface GrantResult {
  issued: IssuedTokens;
  sessionNonce: string | null;
}

const INVALID = 'The authorization code is invalid or expired.';
const REPLAYED = 'The authorization code was already used; the tokens issued for it have been revoked.';

/** Issues and exchanges authorization codes over the metadata store. */
export class AuthorizationCodes {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly clients: Clients) {}

  /**
   * Issues a single-use code valid for `AUTHORIZATION_CODE_TTL_MS` (5 minutes).
   * @returns the code value (43 URL-safe characters), shown only in the redirect.
   */
  async issue(req: CodeRequest): Promise<string> {
    const code = newSecret();
    const now = this.clock.now();
    const record: AuthorizationCodeRecord = { id: newId(), ...req, createdAt: now, expiresAt: now + AUTHORIZATION_CODE_TTL_MS, usedAt: null, authorizationId: null };
    await this.metadata.transact((tx) => tx.put(authorizationCodes, hashToken(code), record));
    return code;
  }

  /**
   * Exchanges a code for tokens.
   * @throws INVALID_GRANT for an unknown, expired or already used code (a reuse also revokes
   *         the authorization the first use created), a redirect_uri that does not match, a
   *         failed PKCE check, or a client deleted meanwhile; INVALID_CLIENT when client
   *         authentication fails.
   */
  async exchange(input: CodeExchange): Promise<GrantResult> {
    const now = this.clock.now();
    const codeHash = hashToken(input.code);
    const code = await this.metadata.get(authorizationCodes, codeHash);
    if (!code || (code.usedAt === null && now >= code.expiresAt)) throw fail('INVALID_GRANT', INVALID);
    if (code.usedAt !== null) {
      const revoked = await this.metadata.transact(async (tx) => {
        const current = await tx.get(authorizationCodes, codeHash);
        return current?.authorizationId ? revokeAuthorizationByIdInTransaction(tx, current.authorizationId, now) : undefined;
      });
      if (revoked) announceAuthorization('revoked', revoked);
      throw fail('INVALID_GRANT', REPLAYED);
    }
    const client = await authenticateClientFor(this.clients, input.credentials, code.clientId);
    if (code.redirectUriGiven ? input.redirectUri !== code.redirectUri : input.redirectUri !== null && input.redirectUri !== code.redirectUri) {
      throw fail('INVALID_GRANT', 'redirect_uri does not match the one of the authorization request.');
    }
    if (code.codeChallenge !== null) {
      if (input.codeVerifier === null) throw fail('INVALID_GRANT', 'code_verifier is required: the authorization request carried a code_challenge.');
      if (!verifyS256(input.codeVerifier, code.codeChallenge)) throw fail('INVALID_GRANT', 'code_verifier does not match the code_challenge.');
    } else if (input.codeVerifier !== null) {
      throw fail('INVALID_GRANT', 'code_verifier was sent but the authorization request carried no code_challenge.');
    }
    // Re-read inside the transaction: of two concurrent exchanges only one succeeds, and a
    // client deleted meanwhile gets no authorization.
    type Outcome = { kind: 'issued'; result: GrantResult } | { kind: 'used'; revoked: AuthorizationRecord | undefined } | { kind: 'gone' };
    const outcome = await this.metadata.transact(async (tx): Promise<Outcome> => {
      const current = await tx.get(authorizationCodes, codeHash);
      if (!current || (await findClient(tx, client.id)) === undefined) return { kind: 'gone' };
      if (current.usedAt !== null) {
        return { kind: 'used', revoked: current.authorizationId ? await revokeAuthorizationByIdInTransaction(tx, current.authorizationId, now) : undefined };
      }
      const sessionNonce = newSecret();
      const issued = createAuthorizationInTransaction(tx, {
        kind: 'web', accountId: current.accountId, teamId: current.teamId, clientId: client.id, description: client.name,
        scope: current.scope, accessTokenTtlMs: WEB_ACCESS_TOKEN_TTL_MS, withRefreshToken: true, sessionNonce,
      }, now);
      tx.put(authorizationCodes, codeHash, { ...current, usedAt: now, authorizationId: issued.record.id });
      return { kind: 'issued', result: { issued, sessionNonce } };
    });
    if (outcome.kind === 'gone') throw fail('INVALID_GRANT', INVALID);
    if (outcome.kind === 'used') {
      if (outcome.revoked) announceAuthorization('revoked', outcome.revoked);
      throw fail('INVALID_GRANT', REPLAYED);
    }
    announceAuthorization('created', outcome.result.issued.record);
    return outcome.result;
  }

  /**
   * Deletes expired unused codes and used codes older than `AUTHORIZATION_CODE_REPLAY_MEMORY_MS` (24 h).
   * @returns the number deleted.
   */
  async prune(): Promise<number> {
    const now = this.clock.now();
    const stale = (c: AuthorizationCodeRecord) => (c.usedAt === null ? now >= c.expiresAt : now >= c.createdAt + AUTHORIZATION_CODE_REPLAY_MEMORY_MS);
    return pruneKeyspace(this.metadata, authorizationCodes, stale);
  }
}
