/** Apps: POST/GET /apps, GET/DELETE /apps/{id_or_name} (reference 3.2). Scopes are checked by the route table. */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './auth.js';
import { appJson } from './serialize.js';
import { fail } from '../../engine/errors.js';
import { appRole } from '../../engine/platform/access.js';
import type { Principal } from '../../engine/auth/authorizations.js';
import type { AppRecord } from '../../engine/platform/records.js';
import { readJson, reply } from './respond.js';
import { paginate, parseRange } from './range.js';

const RANGES = ['id', 'name', 'updated_at'] as const;

/** The app named in the path, when the caller may see it. @throws NOT_FOUND otherwise. */
export function visibleApp(ctx: ApiContext, p: Principal, idOrName: string): AppRecord {
  const app = ctx.apps.find(idOrName);
  if (!app || appRole(p, app) === 'none') throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
  return app;
}

const json = (ctx: ApiContext, app: AppRecord) => appJson(app, ctx.accounts.get(app.ownerId), ctx.urls);

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
  const app = await ctx.apps.create({
    name: name ?? undefined, ownerId: p.accountId, stack: stack ?? undefined, generation: generation as 'cedar' | 'fir' | undefined, space: space ?? null,
  });
  reply(ctx, call, 201, json(ctx, app), { lastModified: app.updatedAt });
}

/** GET /apps: apps the caller may see, Range by id, name or updated_at. */
export async function listApps(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const spec = parseRange(call.ex.header('range'), RANGES);
  const visible = [...ctx.apps.all()].filter((a) => appRole(p, a) !== 'none');
  const page = paginate(visible, spec, RANGES, (a, prop) => (prop === 'name' ? a.name : prop === 'updated_at' ? new Date(a.updatedAt).toISOString() : a.id));
  const lastModified = page.items.reduce((m, a) => Math.max(m, a.updatedAt), 0) || undefined;
  reply(ctx, call, page.status, page.items.map((a) => json(ctx, a)), { headers: page.headers, lastModified });
}

export async function getApp(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = visibleApp(ctx, principalOf(call), call.params.app!);
  reply(ctx, call, 200, json(ctx, app), { lastModified: app.updatedAt });
}

export async function deleteApp(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = visibleApp(ctx, principalOf(call), call.params.app!);
  await ctx.registry.deleteRepositoriesOf(app.name);
  await ctx.apps.remove(app);
  reply(ctx, call, 200, json(ctx, app));
}
