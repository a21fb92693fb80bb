/**
 * The auth host's one cookie (RFC 6265): a random value that identifies the browser. Before
 * sign-in it only binds CSRF tokens; at sign-in it is replaced by a new value whose hash keys
 * the session (so a value planted before sign-in is worthless after it: no session fixation).
 * HttpOnly (no script reads it), SameSite=Lax (sent on the top-level GET that brings the user
 * from a client to /oauth/authorize, never on cross-site POSTs), Path=/, and Secure with the
 * `__Host-` prefix when the auth URL is https.
 */
import { newSecret } from '../../engine/identity/tokens.js';
import type { Exchange } from '../http/exchange.js';

/** The cookie's name for this deployment. */
export function cookieName(secure: boolean): string {
  return secure ? '__Host-slipway_sid' : 'slipway_sid';
}

/** The value of cookie `name` in the request, or '' (first occurrence; values are our base64url). */
export function readCookie(ex: Exchange, name: string): string {
  const header = ex.header('cookie');
  if (!header) return '';
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const v = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{1,128}$/.test(v) ? v : '';
    }
  }
  return '';
}

/**
 * A Set-Cookie value.
 * @param maxAgeSeconds lifetime; null = until the browser closes; 0 = delete
 */
export function setCookie(name: string, value: string, secure: boolean, maxAgeSeconds: number | null): string {
  let c = `${name}=${value}; Path=/; HttpOnly; SameSite=Lax`;
  if (secure) c += '; Secure';
  if (maxAgeSeconds !== null) c += `; Max-Age=${maxAgeSeconds}`;
  return c;
}

/** A fresh browser value (256 bits). */
export function newBrowserValue(): string {
  return newSecret();
}
