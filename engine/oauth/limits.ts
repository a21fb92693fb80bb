/**
 * Lifetimes and policies of the OAuth service, each with its source. Where the spec says
 * "not shown" the value is our decision, recorded in docs/user-guide.md "Platform API and OAuth".
 */

/** Web-flow access tokens expire 8 hours after issue (docs/rules.md States, Authentication 3, Limits). */
export const WEB_ACCESS_TOKEN_TTL_MS = 8 * 3600_000;

/**
 * Authorization codes expire 5 minutes after issue and are single-use. The spec does not show
 * the lifetime (Limits); RFC 6749 §4.1.2 recommends at most 10 minutes and the platform's own
 * identity service used 300 s (docs/platform-conventions.md 2.3).
 */
export const AUTHORIZATION_CODE_TTL_MS = 5 * 60_000;

/**
 * A used code is remembered this long after issue so that a late replay still revokes the
 * tokens it issued (RFC 6749 §4.1.2, "SHOULD revoke"); afterwards it is simply unknown.
 */
export const AUTHORIZATION_CODE_REPLAY_MEMORY_MS = 24 * 3600_000;

/** Auth-host sign-in sessions last 12 hours from sign-in (absolute, not sliding). Our decision. */
export const WEB_SESSION_TTL_MS = 12 * 3600_000;

/** After this many consecutive failed sign-ins for one e-mail address, sign-in for it pauses. Our decision. */
export const SIGN_IN_MAX_FAILURES = 5;

/** How long sign-in stays paused after `SIGN_IN_MAX_FAILURES` failures: 15 minutes. Our decision. */
export const SIGN_IN_LOCKOUT_MS = 15 * 60_000;

/** Largest `expires_in` of a direct authorization: 10 years, in seconds (larger values are refused, 422). */
export const MAX_DIRECT_EXPIRES_IN_SECONDS = 10 * 365 * 24 * 3600;

/** Longest authorization description and client name, characters. */
export const MAX_DESCRIPTION_LENGTH = 1000;
export const MAX_CLIENT_NAME_LENGTH = 255;

/**
 * A browser login of the platform CLI (`heroku login`) must be confirmed within 10 minutes of
 * its start, the CLI's own overall timeout for `heroku login`. Our decision.
 */
export const CLI_LOGIN_TTL_MS = 10 * 60_000;

/** An ended CLI login is remembered this long after its expiry, so a late poll hears why. Our decision. */
export const CLI_LOGIN_MEMORY_MS = 10 * 60_000;

/**
 * Most CLI logins in progress at once across the installation; more are refused until some end.
 * Counted before the new login is written, so concurrent starts may pass it by their number. Our decision.
 */
export const CLI_LOGIN_MAX_PENDING = 1000;

/**
 * A waiting poll re-reads its login from the metadata store at least this often (ms): an answer
 * given through another node reaches it within this time; one given through the poll's own node
 * wakes it at once. Our decision.
 */
export const CLI_LOGIN_RECHECK_MS = 250;

/**
 * Lifetime of the token a CLI browser login hands out: 30 days, the lifetime the platform CLI
 * asks for when it creates a token itself (`heroku login -i`). Our decision.
 */
export const CLI_LOGIN_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
