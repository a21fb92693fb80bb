/**
 * PATCH /apps/{app} (name, build_stack, maintenance, team), config vars (GET/PATCH /apps/{app}/config-vars,
 * scopes read-protected / write-protected or global), labs features
 * (GET /apps/{app}/features[/{name}], PATCH /apps/{app}/features/{name} {enabled}).
 */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { readJson, reply } from './respond.js';
import { stableId } from './serialize.js';
import { appResponse, visibleApp } from './apps.js';
import { fail } from '../../engine/errors.js';
import { appRole, isOwnerLike } from '../../engine/platform/access.js';
import { FEATURES, type Feature } from '../../engine/platform/app-settings.js';
import { checkAppName } from '../../engine/platform/apps.js';
import type { AppRecord } from '../../engine/platform/records.js';
import type { Principal } from '../../engine/identity/authorizations.js';

function featureJson(f: Feature, enabled: boolean) {
  return { id: stableId('feature:' + f.name), name: f.name, description: f.description, state: 'beta', enabled, doc_url: null, display_name: f.name, feedback_email: null };
}

export async function updateApp(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  const body = await readJson(call.ex);
  const buildStack = body.build_stack === undefined ? undefined : typeof body.build_stack === 'string' ? body.build_stack : (body.build_stack as { name?: unknown } | null)?.name;
  if (buildStack !== undefined && typeof buildStack !== 'string') throw fail('INVALID_PARAMS', 'build_stack must be a stack name');
  if (body.maintenance !== undefined && typeof body.maintenance !== 'boolean') throw fail('INVALID_PARAMS', 'maintenance must be a boolean');
  const role = await appRole(ctx.store.metadata, p, app);
  // A rename is checked before anything changes (name rules, access, a taken name), so a
  // refused rename in a body with other fields changes nothing.
  const rename = body.name !== undefined && body.name !== app.name;
  if (rename) await checkRename(ctx, app, isOwnerLike(role), body.name);
  let updated = await ctx.settings.update(app, isOwnerLike(role), { buildStack, maintenance: body.maintenance as boolean | undefined }, p.accountId);
  if (body.team !== undefined) updated = await transferApp(ctx, p, updated, body.team);
  if (rename) updated = await ctx.apps.rename(updated, body.name, p.accountId);
  reply(ctx, call, 200, await appResponse(ctx, updated), { lastModified: updated.updatedAt });
}

/**
 * Moves a personal app into a team the caller administers (PATCH /apps/{app} {team};
 * docs/platform-conventions.md 3.5 team-app transfer), for the API and the dashboard.
 * @throws INVALID_PARAMS for a non-string team; DENIED unless `p` owns the app and administers the team; NOT_FOUND for an unknown team.
 */
export async function transferApp(ctx: ApiContext, p: Principal, app: AppRecord, team: unknown): Promise<AppRecord> {
  if (typeof team !== 'string') throw fail('INVALID_PARAMS', 'team must be a team name');
  if (await appRole(ctx.store.metadata, p, app) !== 'owner') throw fail('DENIED', `Only the owner of ${app.name} can move it into a team.`);
  return ctx.teams.moveApp(app, await ctx.teams.visible(team, p.accountId), p.accountId);
}

/**
 * Renames an app (PATCH /apps/{app} {name}; docs/apps.md "Renaming an app"), for the API and the
 * dashboard: the app and its registry repositories change name in one transaction (engine/platform/apps.ts `rename`).
 * Owner-like callers only (the owner, or an admin of the app's team), as the other owner updates.
 * @throws DENIED otherwise; INVALID_PARAMS for a malformed name; CONFLICT when the name is taken.
 */
export async function renameApp(ctx: ApiContext, p: Principal, app: AppRecord, name: unknown): Promise<AppRecord> {
  await checkRename(ctx, app, isOwnerLike(await appRole(ctx.store.metadata, p, app)), name);
  return ctx.apps.rename(app, name, p.accountId);
}

/**
 * The checks of a rename before it runs (the rename's transaction checks the name again).
 * @throws DENIED unless `ownerLike`; INVALID_PARAMS for a malformed name; CONFLICT when another app holds it.
 */
async function checkRename(ctx: ApiContext, app: AppRecord, ownerLike: boolean, name: unknown): Promise<void> {
  if (!ownerLike) throw fail('DENIED', `Only the owner of ${app.name} can rename it.`);
  const holder = await ctx.apps.find(checkAppName(name));
  if (holder && holder.id !== app.id) throw fail('CONFLICT', `Name ${name as string} is already taken`);
}

export async function getConfigVars(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  reply(ctx, call, 200, await ctx.settings.configVars(app));
}

export async function updateConfigVars(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  const { config } = await ctx.settings.updateConfigVars(app, p.accountId, await readJson(call.ex));
  reply(ctx, call, 200, config);
}

export async function listFeatures(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  reply(ctx, call, 200, FEATURES.map((f) => featureJson(f, app.features?.[f.name] === true)));
}

export async function getFeature(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const { feature, enabled } = ctx.settings.feature(app, call.params.feature!);
  reply(ctx, call, 200, featureJson(feature, enabled));
}

export async function updateFeature(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  const body = await readJson(call.ex);
  if (typeof body.enabled !== 'boolean') throw fail('INVALID_PARAMS', 'enabled must be a boolean');
  const updated: AppRecord = await ctx.settings.setFeature(app, call.params.feature!, body.enabled, p.accountId);
  const { feature, enabled } = ctx.settings.feature(updated, call.params.feature!);
  reply(ctx, call, 200, featureJson(feature, enabled));
}
