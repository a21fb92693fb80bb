/** GET /account (reference 3.1; identity or global scope) and GET /account/rate-limits (reference 1.6; not counted). */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './auth.js';
import { accountJson } from './serialize.js';
import { fail } from '../../engine/errors.js';
import { reply } from './respond.js';

export async function getAccount(ctx: ApiContext, call: ApiCall): Promise<void> {
  const account = ctx.accounts.get(principalOf(call).accountId);
  if (!account) throw fail('UNAUTHORIZED', 'Invalid credentials provided.');
  reply(ctx, call, 200, accountJson(account), { lastModified: account.updatedAt });
}

/** `{"remaining": n}`: the caller's pool, read without taking from it. */
export async function getRateLimits(ctx: ApiContext, call: ApiCall): Promise<void> {
  reply(ctx, call, 200, { remaining: call.remaining ?? ctx.rateLimiter.peek(principalOf(call).accountId).remaining });
}
