/**
 * Direct authorizations and authorization management (docs/rules.md Endpoints 4-5; docs/platform-conventions.md 2.3):
 * POST/GET /oauth/authorizations, GET/PATCH/DELETE /oauth/authorizations/{id or ~},
 * POST /oauth/authorizations/{id}/actions/regenerate-tokens. Bearer only; global scope.
 */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { readJson, reply } from './respond.js';
import { paginate, parseRange } from './range.js';
import { authorizationJson } from './serialize-oauth.js';
import { fail } from '../../engine/errors.js';
import type { AuthorizationRecord } from '../../engine/identity/records.js';
import type { IssuedTokens } from '../../engine/identity/authorizations.js';
import type { AuthorizationTokens } from '../../engine/oauth/authorizations.js';

const RANGES = ['id'] as const;

/** The Authorization record; team-owned ones also carry `team` and `expires_at` (ours: not shown in the spec). */
export async function authorizationResponse(ctx: ApiContext, a: AuthorizationRecord, issued?: IssuedTokens, tokens?: AuthorizationTokens) {
  const client = a.clientId ? await ctx.oauth.clients.get(a.clientId) : undefined;
  const [current, account] = await Promise.all([tokens ?? ctx.oauth.authorizations.tokensOf(a), ctx.accounts.get(a.accountId)]);
  const body = authorizationJson(a, current, account, client, ctx.clock.now(), issued);
  if (a.teamId === null) return body;
  const team = await ctx.teams.find(a.teamId);
  return { ...body, team: team ? { id: team.id, name: team.name } : null, expires_at: a.expiresAt === null ? null : new Date(a.expiresAt).toISOString() };
}
const json = authorizationResponse;

/**
 * The authorization `id` (or `~`, the API key) as `accountId` may manage it: one of their
 * personal ones, or a team authorization of a team they administer (any team admin manages
 * them, docs/rules.md Endpoints 5).
 * @throws NOT_FOUND otherwise; UNAUTHORIZED when the account is gone.
 */
export async function manageableAuthorization(ctx: ApiContext, accountId: string, id: string): Promise<AuthorizationRecord> {
  const team = await ctx.teams.manageableAuthorization(id.toLowerCase(), accountId);
  if (team) return team;
  const account = await ctx.accounts.get(accountId);
  if (!account) throw fail('UNAUTHORIZED', 'Invalid credentials provided.');
  return ctx.oauth.authorizations.find(accountId, id, account.apiKeyAuthorizationId);
}

/** The authorization named in the path. @throws NOT_FOUND (see manageableAuthorization). */
function target(ctx: ApiContext, call: ApiCall): Promise<AuthorizationRecord> {
  return manageableAuthorization(ctx, principalOf(call).accountId, call.params.id!);
}

/** POST /oauth/authorizations {description?, scope?, expires_in?} → 201 with token values. */
export async function createAuthorization(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const body = await readJson(call.ex);
  const issued = await ctx.oauth.authorizations.createDirect(p.accountId, body);
  reply(ctx, call, 201, await json(ctx, issued.record, issued), { lastModified: issued.record.updatedAt });
}

/** GET /oauth/authorizations: the caller's personal authorizations, Range by id. */
export async function listAuthorizations(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const spec = parseRange(call.ex.header('range'), RANGES);
  const all = await ctx.oauth.authorizations.listFor(p.accountId);
  const page = paginate(all, spec, RANGES, (a) => a.id);
  const lastModified = page.items.reduce((m, a) => Math.max(m, a.updatedAt), 0) || undefined;
  reply(ctx, call, page.status, await Promise.all(page.items.map((a) => json(ctx, a))), { headers: page.headers, lastModified });
}

/** GET /oauth/authorizations/{id or ~} */
export async function getAuthorization(ctx: ApiContext, call: ApiCall): Promise<void> {
  const a = await target(ctx, call);
  reply(ctx, call, 200, await json(ctx, a), { lastModified: a.updatedAt });
}

/** PATCH /oauth/authorizations/{id} {description?} */
export async function updateAuthorization(ctx: ApiContext, call: ApiCall): Promise<void> {
  const a = await target(ctx, call);
  const body = await readJson(call.ex);
  const next = body.description === undefined ? a : await ctx.oauth.authorizations.updateDescription(a, body.description);
  reply(ctx, call, 200, await json(ctx, next), { lastModified: next.updatedAt });
}

/** POST /oauth/authorizations/{id}/actions/regenerate-tokens → 200 with the new token values. */
export async function regenerateAuthorization(ctx: ApiContext, call: ApiCall): Promise<void> {
  const issued = await ctx.oauth.authorizations.regenerate(await target(ctx, call));
  reply(ctx, call, 200, await json(ctx, issued.record, issued), { lastModified: issued.record.updatedAt });
}

/** DELETE /oauth/authorizations/{id} → 200 with the record as it was; all its tokens fail at once. */
export async function revokeAuthorization(ctx: ApiContext, call: ApiCall): Promise<void> {
  const a = await target(ctx, call);
  const before = await ctx.oauth.authorizations.tokensOf(a);
  const revoked = await ctx.oauth.authorizations.revoke(a);
  reply(ctx, call, 200, await json(ctx, revoked, undefined, before), { lastModified: revoked.updatedAt });
}
