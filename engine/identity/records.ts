/** Records of accounts and OAuth authorizations (see engine/store.ts). Secrets appear only as hashes. */

export interface Account {
  id: string;
  email: string;
  name: string | null;
  /** scrypt hash, see engine/identity/passwords.ts. */
  passwordHash: string;
  /** TOTP shared secret (RFC 6238), encrypted with the server key (engine/identity/keys.ts). */
  totpSecretSealed: string;
  /** The account's API key authorization (global scope, never expires). */
  apiKeyAuthorizationId: string;
  /** The operator account (created at first start): the only one that may mark OAuth clients trusted. */
  operator?: boolean;
  /**
   * Credentials were issued to this account but not delivered yet (the operator's, between its
   * creation and the credentials file being written; engine/identity/operator.ts): the next
   * start issues them again. Absent = delivered.
   */
  credentialsPending?: boolean;
  createdAt: number;
  updatedAt: number;
}

/** How an authorization came to be. */
export type AuthorizationKind = 'api-key' | 'direct' | 'web';

export interface AuthorizationRecord {
  id: string;
  kind: AuthorizationKind;
  accountId: string;
  /** Owning team for team authorizations (docs/rules.md What the service does 3), else null. */
  teamId: string | null;
  /** OAuth client for web-flow authorizations, else null. */
  clientId: string | null;
  description: string;
  scope: string[];
  createdAt: number;
  updatedAt: number;
  /** ms since epoch after which every token of this authorization fails; null = never. */
  expiresAt: number | null;
  /** Set once revoked; every token of the authorization fails from then on. */
  revokedAt: number | null;
  /** sha256 hex of the current access / refresh token values (null when none). */
  accessTokenHash: string | null;
  refreshTokenHash: string | null;
  /** Lifetime given to each access token of this authorization, ms; null = no expiry. Absent on records written before it existed (= null). */
  accessTokenTtlMs?: number | null;
  /** Opaque value returned as `session_nonce` by the token endpoint (web flow), else null. */
  sessionNonce?: string | null;
}

export interface TokenRecord {
  id: string;
  authorizationId: string;
  kind: 'access' | 'refresh';
  createdAt: number;
  /** ms since epoch; null = no expiry of its own. */
  expiresAt: number | null;
  /** Redacted form shown after creation, e.g. `SVC-**********abcd` (docs/platform-conventions.md 2.2 "Listing may redact"). */
  hint?: string;
}

/**
 * The cluster's server key as the metadata store knows it (keyspace `server-key`, one record
 * under `current`): fingerprints only, never key material (engine/identity/key-check.ts).
 */
export interface ServerKeyRecord {
  /** Fingerprint of the key every node signs and seals with (engine/identity/keys.ts `fingerprint()`). */
  fingerprint: string;
  /** Fingerprint of the key it replaced at the last rotation; null before any rotation. */
  previous: string | null;
  /**
   * False from a rotation until a pass re-sealed every second-factor secret under the new key:
   * until then no node may start without the previous key as its accepted key.
   */
  resealed: boolean;
  /** ms since epoch of the last change. */
  updatedAt: number;
}

/** An API rate-limit bucket (engine/identity/rate-limit.ts): whole and fractional tokens at time `at` (ms since epoch). */
export interface Bucket {
  tokens: number;
  at: number;
}
