/**
 * GET /token on the registry host: the Docker token endpoint (distribution "Token
 * Authentication Specification"). Credentials come as Basic (see auth.ts); `scope` may repeat
 * and each value may hold several space-separated scopes. The token grants, per repository, the
 * intersection of what was asked and what the caller may do; nothing asked-for is an error.
 */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import { permittedActions } from './access.js';
import type { Admission } from './admission.js';
import { signRegistryToken } from '../../engine/identity/registry-token.js';
import { sendJson } from '../http/respond.js';
import { isoTime } from '../../engine/clock.js';

const SCOPE = /^repository:([^:]+):([a-z*,]+)$/;

/** GET/HEAD /token for the admitted caller (admission refuses registry tokens here). */
export async function handleToken(ctx: RegistryContext, ex: Exchange, admitted: Admission): Promise<void> {
  const caller = admitted.caller!;
  const access: Record<string, string[]> = {};
  const requested = ex.query.getAll('scope').flatMap((s) => s.split(' ')).filter(Boolean);
  for (const s of requested) {
    const m = SCOPE.exec(s);
    if (!m) continue; // registry:catalog:* and unknown resource types grant nothing extra
    const [, repository, wanted] = m as unknown as [string, string, string];
    const allowed = permittedActions(ctx, caller.principal, repository);
    const want = wanted.split(',');
    const granted = allowed.filter((a) => want.includes(a) || want.includes('*'));
    if (granted.length > 0) access[repository] = [...new Set([...(access[repository] ?? []), ...granted])];
  }
  const now = ctx.clock.now();
  const iat = Math.floor(now / 1000);
  const token = signRegistryToken(ctx.keys, {
    sub: caller.principal.accountId, aid: caller.principal.authorizationId, access, iat, exp: iat + ctx.tokenTtlSeconds,
  });
  sendJson(ex, 200, { token, access_token: token, expires_in: ctx.tokenTtlSeconds, issued_at: isoTime(now) }, { 'cache-control': 'no-store' });
}
