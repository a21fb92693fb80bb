/**
 * Token values (docs/rules.md Authentication 2 and Limits): `SVC-` followed by 61 characters of the
 * URL-safe base64 alphabet from a CSPRNG, 65 characters in all. Only sha256(value) is stored:
 * tokens carry 366 random bits, so a fast hash is enough (passwords use scrypt instead).
 */
import { hash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

export const TOKEN_PREFIX = 'SVC-';
export const TOKEN_LENGTH = 65;

/** A fresh token value, e.g. `SVC-3q…` (65 characters). */
export function newToken(): string {
  return TOKEN_PREFIX + randomBytes(48).toString('base64url').slice(0, TOKEN_LENGTH - TOKEN_PREFIX.length);
}

/** The storage key of a token or secret value: lowercase sha256 hex (one-shot `crypto.hash`: this runs on every API request). */
export function hashToken(value: string): string {
  return hash('sha256', value, 'hex');
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(value: string, storedHash: string): boolean {
  const a = Buffer.from(hashToken(value), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The form of a token shown after creation: the `SVC-` prefix (when present), ten asterisks and
 * the last four characters, as the platform's listings redact tokens (docs/platform-conventions.md 2.2).
 */
export function redactToken(value: string): string {
  const prefix = value.startsWith(TOKEN_PREFIX) ? TOKEN_PREFIX : '';
  return prefix + '*'.repeat(10) + value.slice(-4);
}

/** A random secret for client secrets, codes and session ids: 32 bytes from a CSPRNG, base64url (43 characters). */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** A new random UUID (v4) for record ids. */
export function newId(): string {
  return randomUUID();
}
