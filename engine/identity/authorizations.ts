/**
 * Authorizations and their tokens (docs/rules.md Resources 2, Authentication 1-3).
 * An authorization owns at most one live access token and one refresh token; revoking it
 * blocks every token at once because each token look-up reads its authorization.
 */
import { key, keyParts, readMaybe, type MetadataReader, type MetadataTransaction } from '../storage/metadata.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';
import { fail } from '../errors.js';
import type { AuthorizationKind, AuthorizationRecord, TokenRecord } from './records.js';
import { hashToken, newId, newToken, redactToken } from './tokens.js';
import { authorizations, authorizationsByAccount, authorizationsByClient, authorizationsByTeam, tokens } from './keyspaces.js';

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
 * web flow, by team for team authorizations), in the caller's transaction. Writes only (no
 * reads), so it adds nothing to the transaction's conflict set.
 */
export function createAuthorizationInTransaction(tx: MetadataTransaction, a: NewAuthorization, now: number): IssuedTokens {
  const record = newAuthorizationRecord(a, now);
  indexAuthorizationInTransaction(tx, record);
  return issueTokensInTransaction(tx, record, a.accessTokenTtlMs, a.withRefreshToken, now);
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

/**
 * Writes the look-up keys of an authorization record (keyspaces `authorizations-by-*`):
 * `account␟authorization`, and when set `client␟authorization` and `team␟authorization`
 * (value: created at, ms). Call in the transaction that stores the record. Idempotent. Revoking
 * keeps them (records are never deleted; `revokeClientAuthorizationsInTransaction` drops a
 * deleted client's entries). Schema migrations build missing indexes the same way
 * (migrations.ts).
 */
export function indexAuthorizationInTransaction(tx: MetadataTransaction, record: AuthorizationRecord): void {
  tx.put(authorizationsByAccount, key(record.accountId, record.id), record.createdAt);
  if (record.clientId) tx.put(authorizationsByClient, key(record.clientId, record.id), record.createdAt);
  if (record.teamId) tx.put(authorizationsByTeam, key(record.teamId, record.id), record.createdAt);
}

/**
 * Replaces an authorization's tokens with new values (regenerate, refresh grant); the old
 * values stop working in the same transaction. `record` must be the current record as read in
 * `tx` (or a new one); writes only.
 */
export function issueTokensInTransaction(tx: MetadataTransaction, record: AuthorizationRecord, accessTtlMs: number | null, withRefresh: boolean, now: number): IssuedTokens {
  if (record.accessTokenHash) tx.remove(tokens, record.accessTokenHash);
  if (withRefresh && record.refreshTokenHash) tx.remove(tokens, record.refreshTokenHash);
  const access = { id: newId(), token: newToken(), expiresAt: accessTtlMs === null ? null : now + accessTtlMs };
  const accessRec: TokenRecord = { id: access.id, authorizationId: record.id, kind: 'access', createdAt: now, expiresAt: access.expiresAt, hint: redactToken(access.token) };
  tx.put(tokens, hashToken(access.token), accessRec);
  let refresh: IssuedTokens['refreshToken'] = null;
  let refreshTokenHash = record.refreshTokenHash;
  if (withRefresh) {
    refresh = { id: newId(), token: newToken() };
    refreshTokenHash = hashToken(refresh.token);
    tx.put(tokens, refreshTokenHash, { id: refresh.id, authorizationId: record.id, kind: 'refresh', createdAt: now, expiresAt: null, hint: redactToken(refresh.token) });
  }
  const updated: AuthorizationRecord = { ...record, accessTokenHash: hashToken(access.token), refreshTokenHash, updatedAt: now };
  tx.put(authorizations, record.id, updated);
  return { record: updated, accessToken: access, refreshToken: refresh };
}

/**
 * Revokes an authorization: its token records are deleted (so every access and refresh token
 * fails at its next use) and the record is kept, marked revoked, for audit and for code-replay
 * detection (docs/rules.md States 2). `record` must be the current record as read in `tx`.
 */
export function revokeAuthorizationInTransaction(tx: MetadataTransaction, record: AuthorizationRecord, now: number): AuthorizationRecord {
  if (record.accessTokenHash) tx.remove(tokens, record.accessTokenHash);
  if (record.refreshTokenHash) tx.remove(tokens, record.refreshTokenHash);
  const revoked: AuthorizationRecord = { ...record, revokedAt: now, updatedAt: now, accessTokenHash: null, refreshTokenHash: null };
  tx.put(authorizations, record.id, revoked);
  return revoked;
}

/**
 * Revokes authorization `id` when it exists and is not revoked yet (a replayed authorization
 * code revokes what the code issued).
 * @returns the revoked record, or undefined when there was nothing live to revoke.
 */
export async function revokeAuthorizationByIdInTransaction(tx: MetadataTransaction, id: string, now: number): Promise<AuthorizationRecord | undefined> {
  const a = await tx.get(authorizations, id);
  return a && a.revokedAt === null ? revokeAuthorizationInTransaction(tx, a, now) : undefined;
}

/** Why a token was not accepted; the wire message stays generic, logs get the reason. */
export type TokenRejection = 'unknown' | 'expired' | 'revoked' | 'wrong-kind';

/**
 * Resolves a bearer value to a principal: one `get` of the token record and one of its
 * authorization, outside any transaction, no writes (this runs on every API and registry
 * request). Synchronous when `db` reads synchronously (engine/maybe-sync.ts).
 * @returns the principal, or the reason it was rejected.
 */
export function authenticateToken(db: MetadataReader, value: string, now: number): MaybePromise<Principal | TokenRejection> {
  return authenticateTokenHash(db, hashToken(value), now);
}

/**
 * `authenticateToken` for a value already hashed with `hashToken`: for a caller that keeps the
 * hash of a value it is sent again and again (a keep-alive connection's Authorization header,
 * server/registry/access.ts). Same reads, same answers.
 */
export function authenticateTokenHash(db: MetadataReader, tokenHash: string, now: number): MaybePromise<Principal | TokenRejection> {
  return andThen(readMaybe(db, tokens, tokenHash), (rec): MaybePromise<Principal | TokenRejection> => {
    if (!rec) return 'unknown';
    if (rec.kind !== 'access') return 'wrong-kind';
    if (rec.expiresAt !== null && now >= rec.expiresAt) return 'expired';
    return andThen(readMaybe(db, authorizations, rec.authorizationId), (auth) => {
      if (!auth || auth.revokedAt !== null) return 'revoked';
      if (auth.expiresAt !== null && now >= auth.expiresAt) return 'expired';
      return principalOfAuthorization(auth);
    });
  });
}

/** The principal an authorization record stands for. */
export function principalOfAuthorization(auth: AuthorizationRecord): Principal {
  return {
    accountId: auth.accountId,
    authorizationId: auth.id,
    kind: auth.kind,
    scope: auth.scope,
    clientId: auth.clientId,
    teamId: auth.teamId,
  };
}

/**
 * Re-checks that an authorization is still usable (registry bearer tokens carry its id): one
 * `get`, outside any transaction; synchronous when `db` reads synchronously.
 * @returns the record when live (not revoked, not expired at `now`), else undefined.
 */
export function isAuthorizationLive(db: MetadataReader, id: string, now: number): MaybePromise<AuthorizationRecord | undefined> {
  return andThen(readMaybe(db, authorizations, id), (auth) => {
    if (!auth || auth.revokedAt !== null || (auth.expiresAt !== null && now >= auth.expiresAt)) return undefined;
    return auth;
  });
}

/**
 * Sets the description of authorization `a` (re-read in `tx`, so a concurrent change is not lost).
 * @returns the updated record.
 */
export async function describeAuthorizationInTransaction(tx: MetadataTransaction, a: AuthorizationRecord, description: string, now: number): Promise<AuthorizationRecord> {
  const current = (await tx.get(authorizations, a.id)) ?? a;
  const next: AuthorizationRecord = { ...current, description, updatedAt: now };
  tx.put(authorizations, a.id, next);
  return next;
}

/**
 * New token values for authorization `a` (re-read in `tx`) with the lifetime it had, no refresh
 * token change (regenerating a direct authorization or an API key).
 */
export async function regenerateTokensInTransaction(tx: MetadataTransaction, a: AuthorizationRecord, now: number): Promise<IssuedTokens> {
  const current = (await tx.get(authorizations, a.id)) ?? a;
  return issueTokensInTransaction(tx, current, current.accessTokenTtlMs ?? null, false, now);
}

/**
 * Revokes authorization `a` (re-read in `tx`; revoking twice is harmless).
 * @returns the revoked record.
 */
export async function revokeCurrentAuthorizationInTransaction(tx: MetadataTransaction, a: AuthorizationRecord, now: number): Promise<AuthorizationRecord> {
  return revokeAuthorizationInTransaction(tx, (await tx.get(authorizations, a.id)) ?? a, now);
}

/**
 * A new access token for a web-flow authorization whose refresh token is `refreshHash` (the
 * refresh grant), when the authorization is still live and that refresh token still current;
 * the previous access token stops working in the same transaction.
 * @returns the issued tokens (no new refresh token), or null when revoked or the refresh token changed.
 */
export async function refreshAccessTokenInTransaction(tx: MetadataTransaction, authorizationId: string, refreshHash: string, accessTtlMs: number, now: number): Promise<IssuedTokens | null> {
  const current = await tx.get(authorizations, authorizationId);
  if (!current || current.revokedAt !== null || current.refreshTokenHash !== refreshHash) return null;
  return issueTokensInTransaction(tx, current, accessTtlMs, false, now);
}

/**
 * Stores `record` (a new direct authorization whose `accessTokenHash` is the hash of `token`)
 * with an access token record for an existing token value (legacy import).
 * @throws CONFLICT when that token value is already known (nothing is written).
 */
export async function importTokenInTransaction(tx: MetadataTransaction, record: AuthorizationRecord & { accessTokenHash: string }, token: string, now: number): Promise<void> {
  if ((await tx.get(tokens, record.accessTokenHash)) !== undefined) throw fail('CONFLICT', 'that token is already known');
  tx.put(tokens, record.accessTokenHash, { id: newId(), authorizationId: record.id, kind: 'access', createdAt: now, expiresAt: null, hint: redactToken(token) });
  tx.put(authorizations, record.id, record);
  indexAuthorizationInTransaction(tx, record);
}

/**
 * Revokes every live authorization issued to client `clientId` and drops the client's index
 * entries (the client is being deleted, in the caller's transaction).
 * @returns the records revoked.
 */
export async function revokeClientAuthorizationsInTransaction(tx: MetadataTransaction, clientId: string, now: number): Promise<AuthorizationRecord[]> {
  const revoked: AuthorizationRecord[] = [];
  for (const { key: k } of await tx.range(authorizationsByClient, { prefix: clientId })) {
    const a = await tx.get(authorizations, keyParts(k)[1]!);
    if (a && a.revokedAt === null) revoked.push(revokeAuthorizationInTransaction(tx, a, now));
    tx.remove(authorizationsByClient, k);
  }
  return revoked;
}
