/**
 * Apps (docs/platform-conventions.md 3.2-3.4; docs/rules.md Endpoints 7), the actions of the /apps API routes by the same
 * engine calls and access rules (visibleApp: role and the third-party rule):
 *   GET  /apps                          apps the person may see
 *   GET  /apps/:app                     stack, generation, formation, releases, config vars
 *                                       (only with the rights of GET /apps/{app}/config-vars)
 *   POST /apps/:app/formation/:type     scale (quantity, size)
 *   POST /apps/:app/rollback            roll back to a release (confirmed)
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import type { AppRecord } from '../../../engine/platform/records.js';
import { visibleApp, visibleApps } from '../../api/apps.js';
import { quantityOf, sizeOf } from '../../api/formation.js';
import { attempt, allowed, confirmOr, done, mirror, noticeOf, sendDashboard, signedInPage, submitted, when, type FormState, type Signed } from './page.js';

export async function showApps(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (!s) return;
  mirror(s, 'GET /apps');
  sendDashboard(ctx, s, 200, 'apps', 'apps', {
    title: 'Apps',
    apps: await Promise.all((await visibleApps(ctx, s.principal)).map(async (a) => ({
      name: a.name, stack: a.stack, generation: a.generation, team: await teamName(ctx, a), release: a.releaseVersion ?? 0, updated: when(a.updatedAt),
    }))),
  });
}

/** The name of the app's team, or '' for a personal app. */
async function teamName(ctx: AuthContext, app: AppRecord): Promise<string> {
  return app.teamId ? (await ctx.teams.find(app.teamId))?.name ?? '' : '';
}

async function renderApp(ctx: AuthContext, s: Signed, app: AppRecord, status: number, state: FormState | null): Promise<void> {
  const releases = await Promise.all((await ctx.releases.list(app.id)).slice().reverse().map(async (r) => ({
    version: r.version, description: r.description, current: r.version === (app.releaseVersion ?? 0), who: (await ctx.accounts.get(r.userId))?.email ?? r.userId,
    created: when(r.createdAt), status: 'succeeded', images: Object.entries(r.images).map(([type, i]) => ({ type, image: i.configDigest.slice(0, 19) })),
  })));
  const showConfig = allowed(s, 'GET /apps/:app/config-vars');
  sendDashboard(ctx, s, status, 'app', 'apps', {
    title: `App ${app.name}`, notice: noticeOf(s.ex),
    app: { name: app.name, stack: app.stack, buildStack: app.buildStack, generation: app.generation, team: await teamName(ctx, app), maintenance: app.maintenance === true },
    formation: (await ctx.releases.formation(app.id)).map((f) => ({ type: f.type, quantity: f.quantity, size: f.size, command: f.command, image: f.image ? f.image.slice(0, 19) : '' })),
    releases,
    config: showConfig ? Object.entries(await ctx.settings.configVars(app)).map(([k, v]) => ({ key: k, value: v })) : null,
    state: state ?? { form: '', errors: {}, values: {} },
  });
}

export async function showApp(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (!s) return;
  mirror(s, 'GET /apps/:app');
  await renderApp(ctx, s, await visibleApp(ctx, s.principal, params.app!), 200, null);
}

export async function submitScale(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'PATCH /apps/:app/formation/:type');
  const app = await visibleApp(ctx, s.principal, params.app!);
  const values = { quantity: (s.form.get('quantity') ?? '').trim(), size: (s.form.get('size') ?? '').trim() };
  const r = await attempt(`scale-${params.type}`, ['quantity', 'size'], values, async () => {
    const type = (await ctx.releases.formationEntry(app.id, params.type!)).type;
    return ctx.releases.scale(app, [{ type, quantity: quantityOf(values.quantity || undefined, type), size: sizeOf(values.size || undefined, type) }], s.principal.accountId);
  });
  if (!r.ok) return await renderApp(ctx, s, app, r.status, r.state);
  done(s, `/apps/${app.name}`, 'scaled');
}

export async function submitRollback(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'POST /apps/:app/releases');
  const app = await visibleApp(ctx, s.principal, params.app!);
  const version = s.form.get('release') ?? '';
  if (!confirmOr(ctx, s, 'apps', { title: 'Roll back', message: `Roll ${app.name} back to release v${version}? A new release is created that runs v${version}'s images, and every process restarts.`, button: 'Roll back' })) return;
  const r = await attempt('rollback', ['release'], { release: version }, () => ctx.releases.rollback(app, s.account.id, version));
  if (!r.ok) return await renderApp(ctx, s, app, r.status, r.state);
  done(s, `/apps/${app.name}`, 'rolled-back');
}
