/**
 * Authorizations and their tokens (docs/rules.md Resources 2, Authentication 1-3).
 * An authorization owns at most one live access token and one refresh token; revoking it
 * blocks every token at once because each token look-up reads its authorization.
 */
import { key, type Store } from '../store.js';
import type { AuthorizationKind, AuthorizationRecord, TokenRecord } from './records.js';
import { hashToken, newId, newToken, redactToken } from './tokens.js';

/** Who is calling: the result of authenticating a token. */
export interface Principal {
  accountId: string;
  authorizationId: string;
  kind: AuthorizationKind;
  scope: string[];
  clientId: string | null;
  teamId: string | null;
}

/** Input of `createAuthorizationInTransaction`. */
export interface NewAuthorization {
  kind: AuthorizationKind;
  accountId: string;
  description: string;
  scope: string[];
  clientId?: string | null;
  teamId?: string | null;
  /** Authorization expiry, ms since epoch (team tokens); null = never. */
  expiresAt?: number | null;
  /** Access token lifetime in ms; null = the token never expires on its own. */
  accessTokenTtlMs: number | null;
  /** Whether to issue a refresh token (web flow). */
  withRefreshToken: boolean;
  /** `session_nonce` of web-flow authorizations. */
  sessionNonce?: string | null;
}

/** Token values of a new or regenerated authorization, shown to the caller once. */
export interface IssuedTokens {
  record: AuthorizationRecord;
  accessToken: { id: string; token: string; expiresAt: number | null };
  refreshToken: { id: string; token: string } | null;
}

/**
 * Creates an authorization with fresh tokens and indexes it by account (and by client for the
 * web flow, by team for team authorizations); call inside a write transaction.
 */
export function createAuthorizationInTransaction(store: Store, a: NewAuthorization, now: number): IssuedTokens {
  const record = newAuthorizationRecord(a, now);
  indexAuthorizationInTransaction(store, record);
  return issueTokensInTransaction(store, record, a.accessTokenTtlMs, a.withRefreshToken, now);
}

/** The record of a new authorization, without tokens (not stored). */
export function newAuthorizationRecord(a: NewAuthorization, now: number): AuthorizationRecord {
  return {
    id: newId(),
    kind: a.kind,
    accountId: a.accountId,
    teamId: a.teamId ?? null,
    clientId: a.clientId ?? null,
    description: a.description,
    scope: a.scope,
    createdAt: now,
    updatedAt: now,
    expiresAt: a.expiresAt ?? null,
    revokedAt: null,
    accessTokenHash: null,
    refreshTokenHash: null,
    accessTokenTtlMs: a.accessTokenTtlMs,
    sessionNonce: a.sessionNonce ?? null,
  };
}

/** The look-up indexes of authorization records (databases `authorizationsBy*` in store.ts). */
export type AuthorizationIndex = 'account' | 'client' | 'team';
const ALL_INDEXES: readonly AuthorizationIndex[] = ['account', 'client', 'team'];

/**
 * Writes the look-up keys of an authorization record: `account␟authorization`, and when set
 * `client␟authorization` and `team␟authorization` (value: created at, ms). The only writer of
 * these keys; call inside the write transaction that stores the record. Idempotent. Revoking
 * keeps them (records are never deleted; clients.ts drops a deleted client's entries).
 * @param only the indexes to write (store migrations build just the ones a schema lacked).
 */
export function indexAuthorizationInTransaction(store: Store, record: AuthorizationRecord, only: readonly AuthorizationIndex[] = ALL_INDEXES): void {
  if (only.includes('account')) store.authorizationsByAccount.put(key(record.accountId, record.id), record.createdAt);
  if (record.clientId && only.includes('client')) store.authorizationsByClient.put(key(record.clientId, record.id), record.createdAt);
  if (record.teamId && only.includes('team')) store.authorizationsByTeam.put(key(record.teamId, record.id), record.createdAt);
}

/**
 * Replaces an authorization's tokens with new values (regenerate, refresh grant); the old
 * values stop working in the same transaction.
 */
export function issueTokensInTransaction(store: Store, record: AuthorizationRecord, accessTtlMs: number | null, withRefresh: boolean, now: number): IssuedTokens {
  if (record.accessTokenHash) store.tokens.remove(record.accessTokenHash);
  if (withRefresh && record.refreshTokenHash) store.tokens.remove(record.refreshTokenHash);
  const access = { id: newId(), token: newToken(), expiresAt: accessTtlMs === null ? null : now + accessTtlMs };
  const accessRec: TokenRecord = { id: access.id, authorizationId: record.id, kind: 'access', createdAt: now, expiresAt: access.expiresAt, hint: redactToken(access.token) };
  store.tokens.put(hashToken(access.token), accessRec);
  let refresh: IssuedTokens['refreshToken'] = null;
  let refreshTokenHash = record.refreshTokenHash;
  if (withRefresh) {
    refresh = { id: newId(), token: newToken() };
    refreshTokenHash = hashToken(refresh.token);
    store.tokens.put(refreshTokenHash, { id: refresh.id, authorizationId: record.id, kind: 'refresh', createdAt: now, expiresAt: null, hint: redactToken(refresh.token) });
  }
  const updated: AuthorizationRecord = { ...record, accessTokenHash: hashToken(access.token), refreshTokenHash, updatedAt: now };
  store.authorizations.put(record.id, updated);
  return { record: updated, accessToken: access, refreshToken: refresh };
}

/**
 * Revokes an authorization: its token records are deleted (so every access and refresh token
 * fails at its next use) and the record is kept, marked revoked, for audit and for code-replay
 * detection (docs/rules.md States 2). Call inside a write transaction.
 */
export function revokeAuthorizationInTransaction(store: Store, record: AuthorizationRecord, now: number): AuthorizationRecord {
  if (record.accessTokenHash) store.tokens.remove(record.accessTokenHash);
  if (record.refreshTokenHash) store.tokens.remove(record.refreshTokenHash);
  const revoked: AuthorizationRecord = { ...record, revokedAt: now, updatedAt: now, accessTokenHash: null, refreshTokenHash: null };
  store.authorizations.put(record.id, revoked);
  return revoked;
}

/** Why a token was not accepted; the wire message stays generic, logs get the reason. */
export type TokenRejection = 'unknown' | 'expired' | 'revoked' | 'wrong-kind';

/**
 * Resolves a bearer value to a principal. Single LMDB reads, no writes.
 * @returns the principal, or the reason it was rejected.
 */
export function authenticateToken(store: Store, value: string, now: number): Principal | TokenRejection {
  const rec = store.tokens.get(hashToken(value));
  if (!rec) return 'unknown';
  if (rec.kind !== 'access') return 'wrong-kind';
  if (rec.expiresAt !== null && now >= rec.expiresAt) return 'expired';
  const auth = store.authorizations.get(rec.authorizationId);
  if (!auth || auth.revokedAt !== null) return 'revoked';
  if (auth.expiresAt !== null && now >= auth.expiresAt) return 'expired';
  return {
    accountId: auth.accountId,
    authorizationId: auth.id,
    kind: auth.kind,
    scope: auth.scope,
    clientId: auth.clientId,
    teamId: auth.teamId,
  };
}

/** Re-checks that an authorization is still usable (registry bearer tokens carry its id). */
export function isAuthorizationLive(store: Store, id: string, now: number): AuthorizationRecord | undefined {
  const auth = store.authorizations.get(id);
  if (!auth || auth.revokedAt !== null || (auth.expiresAt !== null && now >= auth.expiresAt)) return undefined;
  return auth;
}
