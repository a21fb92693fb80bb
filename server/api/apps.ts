/** Apps: POST/GET /apps, GET/DELETE /apps/{id_or_name} (docs/platform-conventions.md 3.2). Scopes are checked by the route table. */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { appJson } from './serialize.js';
import { fail } from '../../engine/errors.js';
import { appRole, isOwnerLike, mayReachApp, thirdPartyBlock } from '../../engine/platform/access.js';
import type { Principal } from '../../engine/identity/authorizations.js';
import type { AppRecord } from '../../engine/platform/records.js';
import { readJson, reply } from './respond.js';
import { paginate, parseRange } from './range.js';

const RANGES = ['id', 'name', 'updated_at'] as const;

/** The app named in the path, when the caller may see it. @throws NOT_FOUND otherwise. */
export async function visibleApp(ctx: ApiContext, p: Principal, idOrName: string): Promise<AppRecord> {
  const app = await ctx.apps.find(idOrName);
  if (!app || await appRole(ctx.store.metadata, p, app) === 'none') throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
  const blocked = await thirdPartyBlock(ctx.store, p, app);
  if (blocked) throw fail('DENIED', blocked);
  return app;
}

/** Every app `p` may see (role and third-party rule), in the store's order. */
export async function visibleApps(ctx: ApiContext, p: Principal, filter: (a: AppRecord) => boolean = () => true): Promise<AppRecord[]> {
  const out: AppRecord[] = [];
  for (const a of await ctx.apps.all()) if (filter(a) && await mayReachApp(ctx.store, p, a)) out.push(a);
  return out;
}

/** An app's representation, with its team when team-owned. */
export async function appResponse(ctx: ApiContext, app: AppRecord) {
  const team = app.teamId ? await ctx.teams.find(app.teamId) : undefined;
  return appJson(app, await ctx.accounts.get(app.ownerId), ctx.urls, ctx.webUrl(app.name), team);
}
const json = appResponse;

export async function createApp(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const body = await readJson(call.ex);
  const name = body.name;
  if (name !== undefined && name !== null && typeof name !== 'string') throw fail('INVALID_PARAMS', 'name must be a string');
  const stack = body.stack;
  if (stack !== undefined && stack !== null && typeof stack !== 'string') throw fail('INVALID_PARAMS', 'stack must be a string');
  const generation = body.generation;
  if (generation !== undefined && generation !== 'cedar' && generation !== 'fir') throw fail('INVALID_PARAMS', 'generation must be "cedar" or "fir"');
  const space = body.space;
  if (space !== undefined && space !== null && (typeof space !== 'string' || !/^[a-z][a-z0-9-]{1,29}$/.test(space))) throw fail('INVALID_PARAMS', 'space must be null (shared runtime) or an isolated space name');
  // A team app: named by `team` (the caller must belong to it), or implied by a team token.
  let teamId: string | null = p.teamId;
  if (body.team !== undefined && body.team !== null) {
    if (typeof body.team !== 'string') throw fail('INVALID_PARAMS', 'team must be a team name');
    const team = await ctx.teams.visible(body.team, p.accountId);
    if (p.teamId !== null && p.teamId !== team.id) throw fail('DENIED', 'A team token creates apps only in its own team.');
    teamId = team.id;
  }
  const app = await ctx.apps.create({
    name: name ?? undefined, ownerId: p.accountId, actorId: p.accountId, teamId, stack: stack ?? undefined, generation: generation as 'cedar' | 'fir' | undefined, space: space ?? null,
  });
  reply(ctx, call, 201, await json(ctx, app), { lastModified: app.updatedAt });
}

/** GET /apps: apps the caller may see, Range by id, name or updated_at. */
export async function listApps(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const spec = parseRange(call.ex.header('range'), RANGES);
  const page = paginate(await visibleApps(ctx, p), spec, RANGES, (a, prop) => (prop === 'name' ? a.name : prop === 'updated_at' ? new Date(a.updatedAt).toISOString() : a.id));
  const lastModified = page.items.reduce((m, a) => Math.max(m, a.updatedAt), 0) || undefined;
  reply(ctx, call, page.status, await Promise.all(page.items.map((a) => json(ctx, a))), { headers: page.headers, lastModified });
}

export async function getApp(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  reply(ctx, call, 200, await json(ctx, app), { lastModified: app.updatedAt });
}

export async function deleteApp(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  if (!isOwnerLike(await appRole(ctx.store.metadata, p, app))) throw fail('DENIED', `Only the owner of ${app.name} (or an admin of its team) can delete it.`);
  await ctx.registry.deleteRepositoriesOf(app.name);
  await ctx.apps.remove(app, p.accountId);
  reply(ctx, call, 200, await json(ctx, app));
}
