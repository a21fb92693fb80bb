/** Apps: POST/GET /apps, GET/DELETE /apps/{id_or_name} (reference 3.2). */
import type { Exchange } from '../http/exchange.js';
import type { ApiContext } from './context.js';
import { authenticateApi, requireScope } from './auth.js';
import { appJson } from './serialize.js';
import { fail } from '../../engine/errors.js';
import { appRole } from '../../engine/platform/access.js';
import type { Principal } from '../../engine/auth/authorizations.js';
import type { AppRecord } from '../../engine/platform/records.js';
import { readJson, sendApi } from './respond.js';

/** The app named in the path, when the caller may see it. @throws NOT_FOUND otherwise. */
export function visibleApp(ctx: ApiContext, p: Principal, idOrName: string): AppRecord {
  const app = ctx.apps.find(idOrName);
  if (!app || appRole(p, app) === 'none') throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
  return app;
}

const json = (ctx: ApiContext, app: AppRecord) => appJson(app, ctx.accounts.get(app.ownerId), ctx.urls);

export async function createApp(ctx: ApiContext, ex: Exchange): Promise<void> {
  const p = authenticateApi(ctx, ex);
  requireScope(p, 'apps:write');
  const body = await readJson(ex);
  const name = body.name;
  if (name !== undefined && name !== null && typeof name !== 'string') throw fail('INVALID_PARAMS', 'name must be a string');
  const stack = body.stack;
  if (stack !== undefined && stack !== null && typeof stack !== 'string') throw fail('INVALID_PARAMS', 'stack must be a string');
  const generation = body.generation;
  if (generation !== undefined && generation !== 'cedar' && generation !== 'fir') throw fail('INVALID_PARAMS', 'generation must be "cedar" or "fir"');
  const app = await ctx.apps.create({
    name: name ?? undefined, ownerId: p.accountId, stack: stack ?? undefined, generation: generation as 'cedar' | 'fir' | undefined,
  });
  sendApi(ctx, ex, 201, json(ctx, app));
}

export async function listApps(ctx: ApiContext, ex: Exchange): Promise<void> {
  const p = authenticateApi(ctx, ex);
  requireScope(p, 'apps:read');
  const apps = [...ctx.apps.all()].filter((a) => appRole(p, a) !== 'none').map((a) => json(ctx, a));
  sendApi(ctx, ex, 200, apps);
}

export async function getApp(ctx: ApiContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const p = authenticateApi(ctx, ex);
  requireScope(p, 'apps:read');
  sendApi(ctx, ex, 200, json(ctx, visibleApp(ctx, p, params.app!)));
}

export async function deleteApp(ctx: ApiContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const p = authenticateApi(ctx, ex);
  requireScope(p, 'apps:write');
  const app = visibleApp(ctx, p, params.app!);
  await ctx.registry.deleteRepositoriesOf(app.name);
  await ctx.apps.remove(app);
  sendApi(ctx, ex, 200, json(ctx, app));
}
