/**
 * The browser's state on the auth host: its cookie value, the signed-in session it maps to (if
 * any), and CSRF tokens bound to that value (HMAC under the server's `csrf` key: a page from
 * another origin cannot read the cookie, so it cannot produce a matching token).
 */
import type { Exchange } from '../http/exchange.js';
import type { AuthContext } from './context.js';
import type { Account } from '../../engine/identity/records.js';
import type { WebSessionRecord } from '../../engine/oauth/records.js';
import { WEB_SESSION_TTL_MS } from '../../engine/oauth/limits.js';
import { cookieName, newBrowserValue, readCookie, setCookie } from './cookies.js';

/** The browser of one request. */
export interface Browser {
  /** The cookie value ('' when the browser has none yet). */
  value: string;
  /** Set-Cookie to send when this request gave the browser a value. */
  setCookie: Record<string, string>;
  /** The signed-in session and its account, or null. */
  signedIn: { session: WebSessionRecord; account: Account } | null;
}

/**
 * Reads the browser's cookie and session.
 * @param assign give a browser without a cookie a fresh value (pages with forms need one for CSRF)
 */
export async function browserOf(ctx: AuthContext, ex: Exchange, assign: boolean): Promise<Browser> {
  const name = cookieName(ctx.secureCookies);
  let value = readCookie(ex, name);
  let set: Record<string, string> = {};
  if (!value && assign) {
    value = newBrowserValue();
    set = { 'set-cookie': setCookie(name, value, ctx.secureCookies, null) };
  }
  const session = value ? await ctx.oauth.sessions.resolve(value) : undefined;
  const account = session ? await ctx.accounts.get(session.accountId) : undefined;
  return { value, setCookie: set, signedIn: session && account ? { session, account } : null };
}

/** Scopes of a read-only sign-in (the sign-in form's "Read-only" box): see, change nothing. */
export const READ_ONLY_SCOPE = ['read'];

/**
 * Why a read-only session may not approve an OAuth client or a CLI login: either would issue a
 * token with more rights than the session has.
 */
export const READ_ONLY_REFUSAL = 'You signed in read-only, which cannot grant access to an application or the CLI. Sign out, sign in again without "Read-only" and start again.';

/** True when the signed-in session is limited (a read-only sign-in). */
export function limitedSession(browser: Browser): boolean {
  return browser.signedIn?.session.scope !== undefined;
}

/** The CSRF token of forms shown to this browser. */
export function csrfToken(ctx: AuthContext, browser: Browser): string {
  return ctx.keys.sign('csrf', 'form:' + browser.value);
}

/** True when a submitted `_csrf` matches the browser's cookie (constant-time). */
export function csrfValid(ctx: AuthContext, browser: Browser, submitted: string | null): boolean {
  return browser.value !== '' && submitted !== null && ctx.keys.verify('csrf', 'form:' + browser.value, submitted);
}

/** Set-Cookie for a new signed-in session value (lifetime of the session). */
export function sessionCookie(ctx: AuthContext, value: string): Record<string, string> {
  return { 'set-cookie': setCookie(cookieName(ctx.secureCookies), value, ctx.secureCookies, Math.floor(WEB_SESSION_TTL_MS / 1000)) };
}

/** Set-Cookie deleting the browser's value (sign-out). */
export function clearedCookie(ctx: AuthContext): Record<string, string> {
  return { 'set-cookie': setCookie(cookieName(ctx.secureCookies), '', ctx.secureCookies, 0) };
}
