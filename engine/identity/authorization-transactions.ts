/**
 * Authorization changes that another domain composes into its own metadata transaction
 * (engine/storage/metadata.ts): the oauth domain creates a web-flow authorization in the same
 * transaction that marks an authorization code used, revokes what a replayed code issued, and
 * revokes a deleted client's authorizations with the client. Same records, indexes and token
 * rules as engine/identity/authorizations.ts (docs/rules.md Resources 2, States 2), over a
 * `MetadataTransaction` instead of the LMDB handles.
 */
import { key, type MetadataTransaction } from '../storage/metadata.js';
import { authorizations, authorizationsByAccount, authorizationsByClient, authorizationsByTeam, tokens } from './keyspaces.js';
import { newAuthorizationRecord, type IssuedTokens, type NewAuthorization } from './authorizations.js';
import type { AuthorizationRecord, TokenRecord } from './records.js';
import { hashToken, newId, newToken, redactToken } from './tokens.js';

/**
 * Creates an authorization with a fresh access token (and a refresh token when asked) and
 * writes its look-up keys by account, client and team, inside `tx`.
 * @returns the record and the token values (shown to the caller once).
 */
export async function createAuthorizationInTx(tx: MetadataTransaction, a: NewAuthorization, now: number): Promise<IssuedTokens> {
  const record = newAuthorizationRecord(a, now);
  tx.put(authorizationsByAccount, key(record.accountId, record.id), record.createdAt);
  if (record.clientId) tx.put(authorizationsByClient, key(record.clientId, record.id), record.createdAt);
  if (record.teamId) tx.put(authorizationsByTeam, key(record.teamId, record.id), record.createdAt);
  const access = { id: newId(), token: newToken(), expiresAt: a.accessTokenTtlMs === null ? null : now + a.accessTokenTtlMs };
  const accessRec: TokenRecord = { id: access.id, authorizationId: record.id, kind: 'access', createdAt: now, expiresAt: access.expiresAt, hint: redactToken(access.token) };
  tx.put(tokens, hashToken(access.token), accessRec);
  let refresh: IssuedTokens['refreshToken'] = null;
  let refreshTokenHash: string | null = null;
  if (a.withRefreshToken) {
    refresh = { id: newId(), token: newToken() };
    refreshTokenHash = hashToken(refresh.token);
    tx.put(tokens, refreshTokenHash, { id: refresh.id, authorizationId: record.id, kind: 'refresh', createdAt: now, expiresAt: null, hint: redactToken(refresh.token) });
  }
  const stored: AuthorizationRecord = { ...record, accessTokenHash: hashToken(access.token), refreshTokenHash };
  tx.put(authorizations, record.id, stored);
  return { record: stored, accessToken: access, refreshToken: refresh };
}

/** Revokes a live record inside `tx`: token records deleted, the record kept and marked revoked. */
function revoke(tx: MetadataTransaction, record: AuthorizationRecord, now: number): AuthorizationRecord {
  if (record.accessTokenHash) tx.remove(tokens, record.accessTokenHash);
  if (record.refreshTokenHash) tx.remove(tokens, record.refreshTokenHash);
  const revoked: AuthorizationRecord = { ...record, revokedAt: now, updatedAt: now, accessTokenHash: null, refreshTokenHash: null };
  tx.put(authorizations, record.id, revoked);
  return revoked;
}

/**
 * Revokes the authorization `id` inside `tx` when it is not revoked yet.
 * @returns the revoked record, or undefined when unknown or already revoked.
 */
export async function revokeAuthorizationByIdInTx(tx: MetadataTransaction, id: string, now: number): Promise<AuthorizationRecord | undefined> {
  const a = await tx.get(authorizations, id);
  return a && a.revokedAt === null ? revoke(tx, a, now) : undefined;
}

/**
 * Revokes every live authorization issued to `clientId` and drops the client's index entries
 * (the client is being deleted), inside `tx`.
 * @returns the records revoked by this call.
 */
export async function revokeClientAuthorizationsInTx(tx: MetadataTransaction, clientId: string, now: number): Promise<AuthorizationRecord[]> {
  const revoked: AuthorizationRecord[] = [];
  for (const { key: k } of await tx.range(authorizationsByClient, { prefix: clientId })) {
    const a = await tx.get(authorizations, k.slice(clientId.length + 1));
    if (a && a.revokedAt === null) revoked.push(revoke(tx, a, now));
    tx.remove(authorizationsByClient, k);
  }
  return revoked;
}
