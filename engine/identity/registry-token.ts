/**
 * Registry bearer tokens (Docker token authentication, distribution "token" spec): stateless,
 * `base64url(JSON claims).base64url(HMAC-SHA256)` under the server's `registry-token` key.
 * Claims name the authorization they came from, so revoking it stops the token at once.
 */
import type { ServerKeys } from './keys.js';

/** Granted actions per repository, plus catalog access. */
export interface RegistryClaims {
  /** Account id. */
  sub: string;
  /** Authorization id the token derives from. */
  aid: string;
  /** repository → granted actions (pull, push, delete). */
  access: Record<string, string[]>;
  /** Issued at / expires at, seconds since epoch. */
  iat: number;
  exp: number;
}

export function signRegistryToken(keys: ServerKeys, claims: RegistryClaims): string {
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return body + '.' + keys.sign('registry-token', body);
}

/** Claims of a valid, unexpired token; null otherwise. `nowMs` from the injectable clock. */
export function verifyRegistryToken(keys: ServerKeys, token: string, nowMs: number): RegistryClaims | null {
  const dot = token.indexOf('.');
  if (dot <= 0) return null;
  const body = token.slice(0, dot);
  if (!keys.verify('registry-token', body, token.slice(dot + 1))) return null;
  let claims: RegistryClaims;
  try {
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof claims.exp !== 'number' || registryTokenExpired(claims, nowMs)) return null;
  return claims;
}

/**
 * Whether verified `claims` have expired at `nowMs` (milliseconds; `exp` is in seconds): the
 * expiry rule of `verifyRegistryToken`, also for claims kept after verification
 * (server/registry/access.ts keeps them per keep-alive connection).
 */
export function registryTokenExpired(claims: RegistryClaims, nowMs: number): boolean {
  return nowMs / 1000 >= claims.exp;
}
