/**
 * Proof Key for Code Exchange (RFC 7636), method S256 only: `plain` is refused because it
 * protects nothing once the authorize request is seen (RFC 7636 §4.2, §7.2).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** A challenge is base64url(sha256(verifier)) without padding: 43 characters (RFC 7636 §4.2). */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** A verifier: 43-128 unreserved characters (RFC 7636 §4.1). */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** True for a well-formed S256 challenge. */
export function isS256Challenge(challenge: string): boolean {
  return CHALLENGE.test(challenge);
}

/** True when `verifier` is well formed and hashes to `challenge` (RFC 7636 §4.6), compared in constant time. */
export function verifyS256(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier) || !CHALLENGE.test(challenge)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}
