/**
 * App sub-resources the platform's CLI reads (e.g. `apps:info`, `releases:info`) that this
 * service answers from what it has (docs/platform-conventions.md 3.4-3.5 shapes):
 *   GET /apps/{app}/addons, GET /addons               always empty: add-ons are not part of this service
 *   GET /apps/{app}/collaborators                     the owner (role owner) and, for a team app, the team's members
 *   GET /apps/{app}/pipeline-couplings                404 not_found (resource pipeline-coupling): apps are never coupled
 *   GET /apps/{app}/releases/{release}/config-vars    the config vars the release was made with
 *   GET /users/{~|id|email}/apps                      the caller's own apps (only `~` or the caller)
 */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { reply } from './respond.js';
import { appResponse, visibleApp, visibleApps } from './apps.js';
import { stableId } from './serialize.js';
import { fail } from '../../engine/errors.js';
import { isoTime } from '../../engine/clock.js';
import type { AppRecord } from '../../engine/platform/records.js';

/** Permissions listed for collaborators (docs/platform-conventions.md 3.5 permission names). */
const OWNER_PERMISSIONS = ['view', 'deploy', 'operate', 'manage'].map((name) => ({ name, description: `${name} the app` }));

export async function listAddons(ctx: ApiContext, call: ApiCall): Promise<void> {
  if (call.params.app !== undefined) await visibleApp(ctx, principalOf(call), call.params.app);
  reply(ctx, call, 200, []);
}

async function collaboratorJson(app: AppRecord, accountId: string, role: string, createdAt: number, ctx: ApiContext) {
  const a = await ctx.accounts.get(accountId);
  return {
    id: stableId(`collaborator:${app.id}:${accountId}`),
    app: { id: app.id, name: app.name },
    user: { id: accountId, email: a?.email ?? null, federated: false },
    role,
    permissions: role === 'member' ? OWNER_PERMISSIONS.slice(0, 3) : OWNER_PERMISSIONS,
    created_at: isoTime(createdAt), updated_at: isoTime(createdAt),
  };
}

export async function listCollaborators(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const out = [collaboratorJson(app, app.ownerId, 'owner', app.createdAt, ctx)];
  const team = app.teamId ? await ctx.teams.find(app.teamId) : undefined;
  if (team) {
    for (const m of await ctx.teams.members(team)) {
      if (m.accountId !== app.ownerId) out.push(collaboratorJson(app, m.accountId, m.role, m.createdAt, ctx));
    }
  }
  reply(ctx, call, 200, await Promise.all(out));
}

export async function getPipelineCoupling(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  throw fail('NOT_FOUND', `App ${app.name} is not connected to a pipeline: pipelines are not part of this service.`, { resource: 'pipeline-coupling' });
}

export async function getReleaseConfigVars(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const r = await ctx.releases.get(app.id, call.params.release!);
  reply(ctx, call, 200, r.config ?? {}, { lastModified: r.createdAt });
}

/** GET /users/{user}/apps: `~`, the caller's id or e-mail; other users' app lists are not shown. */
export async function listUserApps(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const me = await ctx.accounts.get(p.accountId);
  const u = call.params.user!;
  if (u !== '~' && u !== p.accountId && u !== me?.email) throw fail('NOT_FOUND', `Couldn't find that user.`, { resource: 'user' });
  const mine = await visibleApps(ctx, p, (a) => a.ownerId === p.accountId);
  reply(ctx, call, 200, await Promise.all(mine.map((a) => appResponse(ctx, a))));
}
