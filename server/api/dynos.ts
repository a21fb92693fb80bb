/**
 * Dynos (reference "dyno"), derived from the formation (engine/platform/dynos.ts: no process
 * runs here, and each dyno's `state` says so):
 *   GET    /apps/{app}/dynos[/{dyno}]                 list / info
 *   DELETE /apps/{app}/dynos[/{dyno}]                 restart all / one (202)
 *   DELETE /apps/{app}/formations/{type}              restart a process type (202)
 *   POST   /apps/{app}/dynos/{dyno}/actions/stop      stop one (202; the formation starts it again)
 *   POST   /apps/{app}/formations/{type}/actions/stop stop a process type (202)
 * Every response carries a `Warning-Message` header saying that dynos are not run, which the
 * platform's CLI prints.
 */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { reply } from './respond.js';
import { visibleApp } from './apps.js';
import { stableId } from './serialize.js';
import { isoTime } from '../../engine/clock.js';
import { NOT_RUNNING, type Dyno } from '../../engine/platform/dynos.js';
import type { AppRecord, ReleaseRecord } from '../../engine/platform/records.js';

const WARNING = { 'warning-message': 'Slipway records formation and releases but runs no dynos: each dyno is listed from the formation with state "not running".' };

function dynoJson(d: Dyno, app: AppRecord, release: ReleaseRecord | undefined) {
  return {
    id: stableId(`dyno:${app.id}:${d.name}`), name: d.name, type: d.type, state: NOT_RUNNING, command: d.command, size: d.size,
    app: { id: app.id, name: app.name },
    release: release ? { id: release.id, version: release.version } : null,
    attach_url: null,
    created_at: isoTime(d.createdAt), updated_at: isoTime(d.updatedAt),
  };
}

async function newestRelease(ctx: ApiContext, app: AppRecord): Promise<ReleaseRecord | undefined> {
  return app.releaseVersion ? ctx.releases.get(app.id, String(app.releaseVersion)) : undefined;
}

export async function listDynos(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const release = await newestRelease(ctx, app);
  reply(ctx, call, 200, (await ctx.dynos.list(app.id)).map((d) => dynoJson(d, app, release)), { headers: WARNING });
}

export async function getDyno(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const d = await ctx.dynos.get(app.id, call.params.dyno!);
  reply(ctx, call, 200, dynoJson(d, app, await newestRelease(ctx, app)), { headers: WARNING, lastModified: d.updatedAt });
}

/** DELETE /apps/{app}/dynos: restart every process type. */
export async function restartAll(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  await ctx.dynos.restart(app, null);
  reply(ctx, call, 202, {}, { headers: WARNING });
}

/** DELETE /apps/{app}/dynos/{dyno} and POST …/actions/stop: the dyno's process type restarts. */
export async function restartDyno(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const d = await ctx.dynos.get(app.id, call.params.dyno!);
  await ctx.dynos.restart(app, [d.type]);
  reply(ctx, call, 202, {}, { headers: WARNING });
}

/** DELETE /apps/{app}/formations/{type} and POST …/actions/stop: every dyno of the type restarts. */
export async function restartType(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  await ctx.dynos.restart(app, [(await ctx.releases.formationEntry(app.id, call.params.type!)).type]);
  reply(ctx, call, 202, {}, { headers: WARNING });
}
