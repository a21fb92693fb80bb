/**
 * Reads of authorizations and their token records for the other domains (the OAuth API's
 * listings, the dashboard, teams, the token endpoint). Each takes a `MetadataReader`: the store
 * itself for a read outside a transaction, or the caller's transaction.
 */
import { keyParts, type MetadataReader } from '../storage/metadata.js';
import type { AuthorizationRecord, TokenRecord } from './records.js';
import { hashToken } from './tokens.js';
import { authorizations, authorizationsByAccount, authorizationsByTeam, tokens } from './keyspaces.js';

/** The current token records of an authorization (for serialization; values are never kept). */
export interface AuthorizationTokens {
  access: TokenRecord | undefined;
  refresh: TokenRecord | undefined;
}

/** A presented token value resolved to its record and authorization (no validity checks). */
export interface ResolvedToken {
  /** sha256 hex of the value (the token record's key). */
  hash: string;
  token: TokenRecord;
  /** Undefined only when the record is dangling. */
  authorization: AuthorizationRecord | undefined;
}

/** The authorization record `id`, revoked or not, or undefined. */
export function getAuthorization(db: MetadataReader, id: string): Promise<AuthorizationRecord | undefined> {
  return db.get(authorizations, id);
}

/** The current token records of `a` (one `get` per token). */
export async function tokensOf(db: MetadataReader, a: AuthorizationRecord): Promise<AuthorizationTokens> {
  const [access, refresh] = await Promise.all([
    a.accessTokenHash ? db.get(tokens, a.accessTokenHash) : undefined,
    a.refreshTokenHash ? db.get(tokens, a.refreshTokenHash) : undefined,
  ]);
  return { access, refresh };
}

/**
 * The record and authorization of a token value, whatever its kind or state: callers apply
 * their own rules (the refresh grant; the token endpoint's per-account rate limit).
 * @returns undefined for an unknown value.
 */
export async function resolveToken(db: MetadataReader, value: string): Promise<ResolvedToken | undefined> {
  const hash = hashToken(value);
  const token = await db.get(tokens, hash);
  if (!token) return undefined;
  return { hash, token, authorization: await db.get(authorizations, token.authorizationId) };
}

/** Every authorization of an account (personal and team-owned, revoked included), in id order. */
export async function authorizationsOfAccount(db: MetadataReader, accountId: string): Promise<AuthorizationRecord[]> {
  return recordsOf(db, await db.range(authorizationsByAccount, { prefix: accountId }));
}

/** Every authorization of a team (revoked and expired included), in id order. */
export async function authorizationsOfTeam(db: MetadataReader, teamId: string): Promise<AuthorizationRecord[]> {
  return recordsOf(db, await db.range(authorizationsByTeam, { prefix: teamId }));
}

async function recordsOf(db: MetadataReader, index: Array<{ key: string }>): Promise<AuthorizationRecord[]> {
  const records = await Promise.all(index.map(({ key: k }) => db.get(authorizations, keyParts(k)[1]!)));
  return records.filter((a): a is AuthorizationRecord => a !== undefined);
}
