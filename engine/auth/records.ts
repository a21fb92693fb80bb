/** Records of accounts and OAuth authorizations (see engine/store.ts). Secrets appear only as hashes. */

export interface Account {
  id: string;
  email: string;
  name: string | null;
  /** scrypt hash, see engine/auth/passwords.ts. */
  passwordHash: string;
  /** TOTP shared secret (RFC 6238), encrypted with the server key (engine/auth/keys.ts). */
  totpSecretSealed: string;
  /** The account's API key authorization (global scope, never expires). */
  apiKeyAuthorizationId: string;
  createdAt: number;
  updatedAt: number;
}

/** How an authorization came to be. */
export type AuthorizationKind = 'api-key' | 'direct' | 'web';

export interface AuthorizationRecord {
  id: string;
  kind: AuthorizationKind;
  accountId: string;
  /** Owning team for team authorizations (issue 4), else null. */
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
}

export interface TokenRecord {
  id: string;
  authorizationId: string;
  kind: 'access' | 'refresh';
  createdAt: number;
  /** ms since epoch; null = no expiry of its own. */
  expiresAt: number | null;
}
