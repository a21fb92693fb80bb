/** GET /account (docs/platform-conventions.md 3.1; identity or global scope) and GET /account/rate-limits (docs/platform-conventions.md 1.6; not counted). */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { accountJson } from './serialize.js';
import { fail } from '../../engine/errors.js';
import { CachedRepresentation, reply } from './respond.js';
import type { Account } from '../../engine/identity/records.js';

/**
 * GET /account is the bearer-token hot path (benchmarked at tens of thousands of requests per
 * second), so its serialized body and ETag are kept per account until the record's updatedAt
 * changes. At most `CACHE_LIMIT` accounts are kept; the cache is dropped whole when full.
 */
const CACHE_LIMIT = 10_000;
const cache = new Map<string, { updatedAt: number; record: Account; rep: CachedRepresentation }>();

function representation(account: Account): CachedRepresentation {
  const hit = cache.get(account.id);
  if (hit && hit.updatedAt === account.updatedAt && hit.record.email === account.email && hit.record.name === account.name) return hit.rep;
  const rep = new CachedRepresentation(accountJson(account));
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(account.id, { updatedAt: account.updatedAt, record: account, rep });
  return rep;
}

export async function getAccount(ctx: ApiContext, call: ApiCall): Promise<void> {
  const account = await ctx.accounts.get(principalOf(call).accountId);
  if (!account) throw fail('UNAUTHORIZED', 'Invalid credentials provided.');
  reply(ctx, call, 200, representation(account), { lastModified: account.updatedAt });
}

/**
 * GET /account/features (empty: this service has no account-level labs features; app features
 * are under /apps/{app}/features); GET/PATCH /account/features/{name} answer 404 for that reason.
 */
export async function listAccountFeatures(ctx: ApiContext, call: ApiCall): Promise<void> {
  reply(ctx, call, 200, []);
}

export async function getAccountFeature(_ctx: ApiContext, call: ApiCall): Promise<void> {
  throw fail('NOT_FOUND', `Couldn't find that feature: there are no account features here ("${call.params.feature!.slice(0, 60)}"); labs features belong to apps (--app).`, { resource: 'account-feature' });
}

/** `{"remaining": n}`: the caller's pool, read without taking from it. */
export async function getRateLimits(ctx: ApiContext, call: ApiCall): Promise<void> {
  reply(ctx, call, 200, { remaining: call.remaining ?? (await ctx.rateLimiter.peek(principalOf(call).accountId)).remaining });
}
