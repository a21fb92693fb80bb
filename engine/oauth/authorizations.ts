/**
 * Managing an account's authorizations through the platform API (docs/rules.md Endpoints 4-5;
 * docs/platform-conventions.md 2.3): direct authorizations for scripts, listing, description updates, token
 * regeneration and revocation. Web-flow authorizations are created by authorization-codes.ts but listed and
 * revoked here too. Team-owned authorizations (team issue) are excluded from these personal
 * views, as the spec's plain list excludes them (docs/rules.md Endpoints 6).
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import type { AuthorizationRecord } from '../identity/records.js';
import { hashToken, TOKEN_PREFIX } from '../identity/tokens.js';
import {
  createAuthorizationInTransaction, describeAuthorizationInTransaction, importTokenInTransaction, newAuthorizationRecord,
  regenerateTokensInTransaction, revokeCurrentAuthorizationInTransaction, type IssuedTokens,
} from '../identity/authorizations.js';
import { authorizationsOfAccount, getAuthorization, tokensOf, type AuthorizationTokens } from '../identity/authorization-queries.js';
import { normalizeScopes, type Scope } from '../identity/scope.js';
import { MAX_DESCRIPTION_LENGTH, MAX_DIRECT_EXPIRES_IN_SECONDS } from './limits.js';
import { announceAuthorization } from './announce.js';
import { checkIdentifier } from '../identifiers.js';

/** Raw fields of `POST /oauth/authorizations`, validated here. */
export interface DirectAuthorizationInput {
  description?: unknown;
  scope?: unknown;
  expires_in?: unknown;
}

export type { AuthorizationTokens };

/** `description`: a string of at most 1000 characters; absent = '' (always a string on the wire, docs/platform-conventions.md 4). */
export function parseDescription(raw: unknown): string {
  if (raw === undefined || raw === null) return '';
  if (typeof raw !== 'string') throw fail('INVALID_PARAMS', 'description must be a string.');
  if (raw.length > MAX_DESCRIPTION_LENGTH) throw fail('INVALID_PARAMS', `description is longer than ${MAX_DESCRIPTION_LENGTH} characters.`);
  return raw;
}

/** `scope`: an array of scope names; absent = ["global"] (docs/platform-conventions.md 2.1 "default"). */
export function parseScopeArray(raw: unknown): Scope[] {
  if (raw === undefined || raw === null) return ['global'];
  if (!Array.isArray(raw) || !raw.every((s) => typeof s === 'string')) throw fail('INVALID_PARAMS', 'scope must be an array of strings, e.g. ["read", "identity"].');
  try {
    return normalizeScopes(raw as string[]);
  } catch (e) {
    throw fail('INVALID_PARAMS', (e as Error).message);
  }
}

/**
 * `expires_in`: seconds, an integer or a string of digits (the CLI sends a string, docs/platform-conventions.md 4),
 * 1 to 10 years; absent or null = never (personal direct authorizations, docs/rules.md Authentication 3).
 * @returns milliseconds, or null for no expiry.
 */
export function parseExpiresIn(raw: unknown): number | null {
  if (raw === undefined || raw === null) return null;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,12}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_DIRECT_EXPIRES_IN_SECONDS) {
    throw fail('INVALID_PARAMS', `expires_in must be a whole number of seconds from 1 to ${MAX_DIRECT_EXPIRES_IN_SECONDS}, or null for no expiry.`);
  }
  return n * 1000;
}

/** An account's personal authorizations, through the identity domain's service functions. */
export class Authorizations {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

  /**
   * Creates a direct authorization (no client, no refresh token).
   * @throws INVALID_PARAMS for a malformed description, scope or expires_in.
   */
  async createDirect(accountId: string, input: DirectAuthorizationInput): Promise<IssuedTokens> {
    const description = parseDescription(input.description);
    const scope = parseScopeArray(input.scope);
    const ttl = parseExpiresIn(input.expires_in);
    const now = this.clock.now();
    const issued = await this.metadata.transact((tx) => createAuthorizationInTransaction(tx, {
      kind: 'direct', accountId, description, scope, accessTokenTtlMs: ttl, withRefreshToken: false,
    }, now));
    announceAuthorization('created', issued.record);
    return issued;
  }

  /** The account's live personal authorizations (API key, direct, web), in id order. */
  async listFor(accountId: string): Promise<AuthorizationRecord[]> {
    const all = await authorizationsOfAccount(this.metadata, accountId);
    return all.filter((a) => a.revokedAt === null && a.teamId === null).sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  }

  /**
   * One of the account's live personal authorizations by id; `~` names its API key (docs/platform-conventions.md 1.1).
   * @throws NOT_FOUND (resource "authorization") when absent, revoked or someone else's;
   *         INVALID_PARAMS for an over-long id.
   */
  async find(accountId: string, idOrTilde: string, apiKeyAuthorizationId: string): Promise<AuthorizationRecord> {
    const id = idOrTilde === '~' ? apiKeyAuthorizationId : checkIdentifier('authorization', idOrTilde).toLowerCase();
    const a = await getAuthorization(this.metadata, id);
    if (!a || a.accountId !== accountId || a.revokedAt !== null || a.teamId !== null) {
      throw fail('NOT_FOUND', "Couldn't find that authorization.", { resource: 'authorization' });
    }
    return a;
  }

  /** The current token records of `a` (one read per token). */
  tokensOf(a: AuthorizationRecord): Promise<AuthorizationTokens> {
    return tokensOf(this.metadata, a);
  }

  /** Sets the description. @throws INVALID_PARAMS for a non-string or over-long one. */
  async updateDescription(a: AuthorizationRecord, raw: unknown): Promise<AuthorizationRecord> {
    const description = parseDescription(raw);
    const now = this.clock.now();
    return this.metadata.transact((tx) => describeAuthorizationInTransaction(tx, a, description, now));
  }

  /**
   * New token values for a direct authorization or the API key, with the same lifetime as
   * before; the old values fail from this commit on. A legacy (unprefixed) token becomes a
   * `SVC-` one (docs/rules.md Authentication 2).
   * @throws DENIED for web-flow authorizations (their client refreshes instead; docs/platform-conventions.md 2.3).
   */
  async regenerate(a: AuthorizationRecord): Promise<IssuedTokens> {
    if (a.kind === 'web') throw fail('DENIED', 'Tokens of web-flow authorizations cannot be regenerated; the OAuth client gets a new access token with its refresh token.');
    const now = this.clock.now();
    const issued = await this.metadata.transact((tx) => regenerateTokensInTransaction(tx, a, now));
    announceAuthorization('regenerated', issued.record);
    return issued;
  }

  /**
   * Revokes an authorization: every access and refresh token of it fails at once (docs/rules.md States).
   * The account's API key cannot be revoked (it is regenerated instead): our decision, so an
   * account always keeps a credential for the registry and the API.
   * @throws INVALID_PARAMS for the API key.
   */
  async revoke(a: AuthorizationRecord): Promise<AuthorizationRecord> {
    if (a.kind === 'api-key') throw fail('INVALID_PARAMS', "The account's API key cannot be revoked; regenerate it instead (POST /oauth/authorizations/~/actions/regenerate-tokens).");
    const now = this.clock.now();
    const revoked = await this.metadata.transact((tx) => revokeCurrentAuthorizationInTransaction(tx, a, now));
    announceAuthorization('revoked', revoked);
    return revoked;
  }

  /**
   * Imports a token issued before the `SVC-` prefix existed (docs/rules.md Authentication 2) as a direct
   * authorization without expiry; it authenticates as it is until regenerated.
   * @throws INVALID_PARAMS for a value shorter than 32 characters or one carrying the prefix.
   */
  async importLegacy(accountId: string, token: string, scope: Scope[], description: string): Promise<AuthorizationRecord> {
    if (token.length < 32 || token.startsWith(TOKEN_PREFIX)) throw fail('INVALID_PARAMS', 'a legacy token has no SVC- prefix and at least 32 characters');
    const now = this.clock.now();
    const record = { ...newAuthorizationRecord({ kind: 'direct', accountId, description, scope, accessTokenTtlMs: null, withRefreshToken: false }, now), accessTokenHash: hashToken(token) };
    await this.metadata.transact((tx) => importTokenInTransaction(tx, record, token, now));
    announceAuthorization('created', record);
    return record;
  }
}
