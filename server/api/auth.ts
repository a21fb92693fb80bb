/**
 * Platform API authentication (spec Authentication 1; reference 1.2): `Authorization: Bearer
 * <token>`, or Basic with an empty or e-mail username and the token as password.
 * Scope checks name the scope needed (spec Authentication 6-7).
 */
import type { Exchange } from '../http/exchange.js';
import type { ApiContext } from './context.js';
import { authenticateToken, type Principal } from '../../engine/auth/authorizations.js';
import { allows, scopesGranting, type Need } from '../../engine/auth/scope.js';
import { fail } from '../../engine/errors.js';

/**
 * @throws UNAUTHORIZED when credentials are missing, malformed, invalid, expired or revoked.
 */
export function authenticateApi(ctx: ApiContext, ex: Exchange): Principal {
  const h = ex.header('authorization');
  if (!h) throw fail('UNAUTHORIZED', 'No credentials provided. Send Authorization: Bearer <token>.');
  const space = h.indexOf(' ');
  const scheme = h.slice(0, space).toLowerCase();
  let token = h.slice(space + 1).trim();
  let email: string | undefined;
  if (scheme === 'basic') {
    const decoded = Buffer.from(token, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    email = decoded.slice(0, colon);
    token = decoded.slice(colon + 1);
  } else if (scheme !== 'bearer') {
    throw fail('UNAUTHORIZED', 'Invalid credentials provided. Use Bearer authentication.');
  }
  const p = authenticateToken(ctx.store, token, ctx.clock.now());
  if (typeof p === 'string') throw fail('UNAUTHORIZED', 'Invalid credentials provided.');
  if (email && ctx.accounts.byEmail(email)?.id !== p.accountId) throw fail('UNAUTHORIZED', 'Invalid credentials provided.');
  return p;
}

/**
 * @throws DENIED (403 forbidden) naming the scopes that would grant `need`.
 */
export function requireScope(p: Principal, need: Need): void {
  if (!allows(p.scope, need)) {
    throw fail('DENIED', `This token's scope (${p.scope.join(', ') || 'none'}) does not allow this request; it needs one of: ${scopesGranting(need).join(', ')}.`);
  }
}
