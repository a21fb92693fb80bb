/** Releases: GET /apps/{app}/releases[/{id_or_version}], POST /apps/{app}/releases {release} = rollback (docs/platform-conventions.md 3.4). */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { readJson, reply } from './respond.js';
import { visibleApp } from './apps.js';
import { releaseJson } from './serialize-platform.js';
import { paginate, parseRange } from './range.js';
import { fail } from '../../engine/errors.js';

const RANGES = ['version', 'id'] as const;

export async function listReleases(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const spec = parseRange(call.ex.header('range'), RANGES);
  const page = paginate(await ctx.releases.list(app.id), spec, RANGES, (r, prop) => (prop === 'id' ? r.id : String(r.version).padStart(10, '0')));
  reply(ctx, call, page.status, await Promise.all(page.items.map(async (r) => releaseJson(r, app, await ctx.accounts.get(r.userId)))), { headers: page.headers });
}

export async function getRelease(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const r = await ctx.releases.get(app.id, call.params.release!);
  reply(ctx, call, 200, releaseJson(r, app, await ctx.accounts.get(r.userId)), { lastModified: r.createdAt });
}

export async function createRelease(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  const body = await readJson(call.ex);
  const target = typeof body.release === 'number' ? String(body.release) : body.release;
  if (typeof target !== 'string') throw fail('INVALID_PARAMS', 'release (the id or version to roll back to) is required; slug releases are not supported');
  const { release, app: updated } = await ctx.releases.rollback(app, p.accountId, target);
  reply(ctx, call, 201, releaseJson(release, updated, await ctx.accounts.get(p.accountId)));
}
