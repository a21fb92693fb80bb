/**
 * Client redirect URIs (RFC 6749 §3.1.2; RFC 8252 §7.3 for loopback): an absolute `https` URL,
 * or `http` only on a loopback host (localhost, 127.0.0.0/8, [::1]); no fragment. Authorize
 * requests must repeat the registered URI exactly (RFC 6749 §3.1.2.3, simple string comparison).
 */
import { isIPv4 } from 'node:net';
import { fail } from '../errors.js';

/** Longest accepted redirect URI, characters. */
export const MAX_REDIRECT_URI_LENGTH = 2000;

function isLoopback(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  return isIPv4(hostname) && hostname.startsWith('127.');
}

/**
 * Checks a redirect URI given at client registration.
 * @returns the URI unchanged (it is compared as a string later).
 * @throws INVALID_PARAMS explaining the rule that failed.
 */
export function validateRedirectUri(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0) throw fail('INVALID_PARAMS', 'redirect_uri is required and must be a string.');
  if (raw.length > MAX_REDIRECT_URI_LENGTH) throw fail('INVALID_PARAMS', `redirect_uri is longer than ${MAX_REDIRECT_URI_LENGTH} characters.`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw fail('INVALID_PARAMS', `redirect_uri "${raw.slice(0, 100)}" is not an absolute URL.`);
  }
  if (raw.includes('#')) throw fail('INVALID_PARAMS', 'redirect_uri must not contain a fragment (RFC 6749 section 3.1.2).');
  if (u.username || u.password) throw fail('INVALID_PARAMS', 'redirect_uri must not contain user information.');
  if (u.protocol === 'https:') return raw;
  if (u.protocol === 'http:' && isLoopback(u.hostname)) return raw;
  throw fail('INVALID_PARAMS', 'redirect_uri must use https, or http on a loopback address (localhost, 127.0.0.1, [::1]).');
}

/**
 * The redirect URI with `params` added to its query, keeping any query it already has
 * (RFC 6749 §4.1.2: "MUST retain" existing query components).
 */
export function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.append(k, v);
  return u.toString();
}
