/**
 * Time-based one-time passwords (RFC 6238, SHA-1, 30-second steps, 6 digits: the parameters
 * every authenticator app uses). HMAC from @noble/hashes (RFC 4226 section 5.3 truncation),
 * base32 from @scure/base. The second factor is mandatory for sign-in (docs/rules.md Authentication 4).
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha1 } from '@noble/hashes/legacy.js';
import { base32 } from '@scure/base';
import { randomBytes, timingSafeEqual } from 'node:crypto';

/** Step length in seconds (RFC 6238 X). */
export const TOTP_STEP_SECONDS = 30;

/** A fresh 160-bit secret, base32 without padding (what authenticator apps take). */
export function newTotpSecret(): string {
  return base32.encode(randomBytes(20)).replace(/=+$/, '');
}

/** The 6-digit code for `secret` at time `ms` (ms since epoch). */
export function totpCode(secret: string, ms: number): string {
  const counter = Math.floor(ms / 1000 / TOTP_STEP_SECONDS);
  const msg = new Uint8Array(8);
  new DataView(msg.buffer).setBigUint64(0, BigInt(counter));
  const padded = secret.toUpperCase() + '='.repeat((8 - (secret.length % 8)) % 8);
  const mac = hmac(sha1, base32.decode(padded), msg);
  const offset = mac[mac.length - 1]! & 0x0f;
  const bin = ((mac[offset]! & 0x7f) << 24) | (mac[offset + 1]! << 16) | (mac[offset + 2]! << 8) | mac[offset + 3]!;
  return String(bin % 1_000_000).padStart(6, '0');
}

/**
 * Checks a code, allowing one step of clock drift either way (RFC 6238 section 5.2).
 * Returns the matched step counter (for replay protection) or null.
 */
export function verifyTotp(secret: string, code: string, ms: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  for (const drift of [0, -1, 1]) {
    const t = ms + drift * TOTP_STEP_SECONDS * 1000;
    const expected = Buffer.from(totpCode(secret, t));
    if (timingSafeEqual(expected, Buffer.from(code))) return Math.floor(t / 1000 / TOTP_STEP_SECONDS);
  }
  return null;
}
