/**
 * PATCH /apps/{app} (build_stack, maintenance), config vars (GET/PATCH /apps/{app}/config-vars,
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
import type { AppRecord } from '../../engine/platform/records.js';

function featureJson(f: Feature, enabled: boolean) {
  return { id: stableId('feature:' + f.name), name: f.name, description: f.description, state: 'beta', enabled, doc_url: null, display_name: f.name, feedback_email: null };
}

export async function updateApp(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  const body = await readJson(call.ex);
  if (body.name !== undefined && body.name !== app.name) throw fail('INVALID_PARAMS', 'renaming an app is not supported: its registry repositories are named after it');
  const buildStack = body.build_stack === undefined ? undefined : typeof body.build_stack === 'string' ? body.build_stack : (body.build_stack as { name?: unknown } | null)?.name;
  if (buildStack !== undefined && typeof buildStack !== 'string') throw fail('INVALID_PARAMS', 'build_stack must be a stack name');
  if (body.maintenance !== undefined && typeof body.maintenance !== 'boolean') throw fail('INVALID_PARAMS', 'maintenance must be a boolean');
  const role = await appRole(ctx.store.metadata, p, app);
  let updated = await ctx.settings.update(app, isOwnerLike(role), { buildStack, maintenance: body.maintenance as boolean | undefined }, p.accountId);
  if (body.team !== undefined) {
    // Moving a personal app into a team the caller administers (docs/platform-conventions.md 3.5 team-app transfer).
    if (typeof body.team !== 'string') throw fail('INVALID_PARAMS', 'team must be a team name');
    if (role !== 'owner') throw fail('DENIED', `Only the owner of ${app.name} can move it into a team.`);
    updated = await ctx.teams.moveApp(updated, await ctx.teams.visible(body.team, p.accountId), p.accountId);
  }
  reply(ctx, call, 200, await appResponse(ctx, updated), { lastModified: updated.updatedAt });
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
