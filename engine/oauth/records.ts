/** OAuth records (see engine/store.ts). Secrets (client secrets, codes, session ids) appear only as sha256 hashes. */

/** A registered OAuth client (docs/rules.md Resources 1; docs/platform-conventions.md 2.4). */
export interface ClientRecord {
  /** UUID, sent as `client_id`. */
  id: string;
  /** Shown to users on the consent page. */
  name: string;
  /** The one callback URL; authorize requests must match it exactly (RFC 6749 §3.1.2.3). */
  redirectUri: string;
  /** sha256 hex of the client secret. */
  secretHash: string;
  /** First-party (the platform's own products): consent is not asked. Only the operator sets it. */
  trusted: boolean;
  /** Account that registered the client. */
  ownerId: string;
  createdAt: number;
  updatedAt: number;
}

/** An authorization code issued by `/oauth/authorize` (RFC 6749 §4.1.2), keyed by sha256(code). */
export interface AuthorizationCodeRecord {
  id: string;
  clientId: string;
  accountId: string;
  /** Owning team chosen on the consent page (team issue); null = the user's personal authorization. */
  teamId: string | null;
  scope: string[];
  /** The redirect URI the code was sent to. */
  redirectUri: string;
  /** Whether the authorize request carried `redirect_uri` (then the token request must repeat it, RFC 6749 §4.1.3). */
  redirectUriGiven: boolean;
  /** PKCE S256 challenge (RFC 7636 §4.2), or null when the client sent none. */
  codeChallenge: string | null;
  createdAt: number;
  /** ms since epoch; the code is refused from then on. */
  expiresAt: number;
  /** Set at the first exchange; a second exchange is a replay (RFC 6749 §4.1.2). */
  usedAt: number | null;
  /** The authorization the first exchange created (revoked on replay). */
  authorizationId: string | null;
}

/** A signed-in browser on the auth host, keyed by sha256(cookie value). */
export interface WebSessionRecord {
  id: string;
  accountId: string;
  createdAt: number;
  /** ms since epoch; absolute, not sliding. */
  expiresAt: number;
  /**
   * Scopes of a limited session (a read-only sign-in: `['read']`); absent = the account's full
   * rights (`global`). The dashboard applies them as an API token's scopes.
   */
  scope?: string[];
}

/** Sign-in bookkeeping for one e-mail address (known or not, so lockout reveals nothing). */
export interface SignInState {
  /** Consecutive failures since the last success or lockout. */
  failures: number;
  /** ms since epoch until which sign-in is refused; null = not locked. */
  lockedUntil: number | null;
  /** Last accepted TOTP time step: a code is accepted once (RFC 6238 §5.2). */
  lastTotpStep: number | null;
  updatedAt: number;
}

/** Where a CLI login stands: waiting for the browser, answered there, or its token handed out. */
export type CliLoginState = 'pending' | 'approved' | 'denied' | 'delivered';

/** One browser login of the platform CLI (engine/oauth/cli-logins.ts), keyed by its id. */
export interface CliLoginRecord {
  /** Random 256-bit id (base64url), part of the browser and poll URLs. */
  id: string;
  /** sha256 hex of the polling token. */
  tokenHash: string;
  /** What the CLI said it is, e.g. "Heroku CLI login from build-host" (shown on the confirmation page). */
  description: string;
  /** ms since epoch. */
  createdAt: number;
  expiresAt: number;
  state: CliLoginState;
  /** The account that answered in the browser; null while pending. */
  accountId: string | null;
  /**
   * Who started it, as counted for the per-source limit (an IPv4 address or IPv6 /64 prefix,
   * server/http/client-address.ts); absent on logins of builds before the limit. Kept only as
   * long as the record (its TTL plus CLI_LOGIN_MEMORY_MS).
   */
  source?: string;
}
