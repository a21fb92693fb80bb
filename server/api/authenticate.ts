/**
 * Platform API authentication (docs/rules.md Authentication 1, 4; docs/platform-conventions.md 1.2): `Authorization: Bearer
 * <token>`, or Basic with an empty or e-mail username and a token as password (documented for
 * personal scripts). Routes marked bearer-only (direct authorizations) refuse Basic outright:
 * a username and password never create a token, because the second factor is mandatory.
 * Scope checks name the scope needed (docs/rules.md Authentication 6-7).
 */
import type { Exchange } from '../http/exchange.js';
import type { ApiCall, ApiContext } from './context.js';
import { authenticateToken, type Principal } from '../../engine/identity/authorizations.js';
import { allows, scopesGranting, type Need } from '../../engine/identity/scope.js';
import { fail } from '../../engine/errors.js';
import { recordUse } from '../../engine/identity/usage.js';

const INVALID = 'Invalid credentials provided.';

/**
 * Reads the request's credentials.
 * @param bearerOnly refuse Basic (docs/rules.md Authentication 4)
 * @returns the caller, or null when no Authorization header was sent.
 * @throws UNAUTHORIZED (401) when credentials are malformed, invalid, expired or revoked, or
 *         when Basic is sent to a bearer-only route.
 */
export async function readCredentials(ctx: ApiContext, ex: Exchange, bearerOnly: boolean): Promise<Principal | null> {
  const h = ex.header('authorization');
  if (!h) return null;
  const space = h.indexOf(' ');
  const scheme = (space < 0 ? h : h.slice(0, space)).toLowerCase();
  let token = space < 0 ? '' : h.slice(space + 1).trim();
  let email: string | undefined;
  if (scheme === 'basic') {
    if (bearerOnly) {
      throw fail('UNAUTHORIZED', `Basic authentication cannot be used here: a username and password never create an authorization, because the second factor is mandatory. Send an existing API token as "Authorization: Bearer <token>" (your API key, or a token from signing in at ${ctx.urls.auth}).`);
    }
    const decoded = Buffer.from(token, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw fail('UNAUTHORIZED', INVALID);
    email = decoded.slice(0, colon);
    token = decoded.slice(colon + 1);
  } else if (scheme !== 'bearer') {
    throw fail('UNAUTHORIZED', `${INVALID} Use "Authorization: Bearer <token>".`);
  }
  if (!token) throw fail('UNAUTHORIZED', INVALID);
  const now = ctx.clock.now();
  const p = await authenticateToken(ctx.store.metadata, token, now);
  if (typeof p === 'string') throw fail('UNAUTHORIZED', INVALID);
  if (email && (await ctx.accounts.byEmail(email))?.id !== p.accountId) throw fail('UNAUTHORIZED', INVALID);
  recordUse(ctx.store.metadata, p.authorizationId, now);
  return p;
}

/** The caller of an authenticated route. @throws UNAUTHORIZED when there is none. */
export function principalOf(call: ApiCall): Principal {
  if (!call.principal) throw fail('UNAUTHORIZED', 'No credentials provided. Send "Authorization: Bearer <token>".');
  return call.principal;
}

/**
 * The access rule of one API route for a known caller (docs/rules.md Authentication 6, 8): the route's
 * scope need, and user-only routes refuse team tokens whatever their scope. The API dispatcher
 * and the auth host's dashboard (which performs the same actions for a signed-in person) both
 * apply it, so there is one set of rules.
 * @throws DENIED naming the scope needed, or explaining the team-token refusal.
 */
export function requireRouteAccess(p: Principal, route: { access: Need | 'token' | 'public'; userOnly?: boolean }): void {
  if (route.access !== 'token' && route.access !== 'public') requireScope(p, route.access);
  if (route.userOnly && p.teamId !== null) {
    throw fail('DENIED', 'This is a team token: it reaches only its team\'s apps and resources and cannot perform user-only actions (account, personal authorizations, OAuth clients, team management), whatever its scope.');
  }
}

/**
 * @throws DENIED (403 forbidden) naming the scopes that would grant `need`.
 */
export function requireScope(p: Principal, need: Need): void {
  if (!allows(p.scope, need)) {
    const granting = scopesGranting(need);
    throw fail('DENIED', `This token's scope (${p.scope.join(', ') || 'none'}) does not allow this request; it needs the ${granting.length === 1 ? `${granting[0]} scope` : `scope ${granting.slice(0, -1).join(', ')} or ${granting[granting.length - 1]}`}.`);
  }
}
