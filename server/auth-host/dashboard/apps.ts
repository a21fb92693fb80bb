/**
 * Apps (docs/platform-conventions.md 3.2-3.4; docs/rules.md Endpoints 7), the actions of the /apps API
 * routes by the same functions and access rules (visibleApp: role and the third-party rule):
 *   GET  /apps                          apps the person may see, and the form to create one
 *   POST /apps                          create (personal or in one of the person's teams; newApp)
 *   GET  /apps/:app                     owner, stack, formation (size from DYNO_SIZES), releases, webhooks
 *   POST /apps/:app/formation/:type     scale (quantity, size)
 *   POST /apps/:app/rollback            roll back to a release (confirmed)
 * Config vars are on their own tab (config-vars.ts), webhooks' forms and deliveries on theirs (webhooks.ts), transfer and deletion on Settings (app-settings.ts).
 */
import type { AuthContext } from '../context.js';
import type { AppRecord } from '../../../engine/platform/records.js';
import { newApp, visibleApp, visibleApps } from '../../api/apps.js';
import { quantityOf, sizeOf } from '../../api/formation.js';
import { DYNO_SIZES } from '../../../engine/platform/formation.js';
import { appPlace, allowed, backTo, confirmOr, done, mirror, noticeOf, sendDashboard, when, type FormState, type Signed } from './page.js';
import { actOrRerender, showPage, submitForm } from './handler.js';
import { ownerOf, summarize } from './app-summary.js';
import { webhookRows } from './webhooks.js';

async function renderApps(ctx: AuthContext, s: Signed, status: number, state: FormState | null): Promise<void> {
  mirror(s, 'GET /apps');
  sendDashboard(ctx, s, status, 'apps', 'apps', {
    title: 'Apps', notice: noticeOf(s.ex),
    apps: await Promise.all((await visibleApps(ctx, s.principal)).map((a) => summarize(ctx, a))),
    canCreate: allowed(s, 'POST /apps'),
    teams: (await ctx.teams.teamsOf(s.account.id)).map(({ team }) => team.name),
    values: state?.values ?? {}, errors: state?.errors ?? {},
  });
}

/** GET /apps (renderApps applies GET /apps' rule). */
export const showApps = showPage(null, (ctx, s) => renderApps(ctx, s, 200, null));

/** POST /apps: create an app. */
export const submitCreateApp = submitForm('POST /apps', async (ctx, s) => {
  const values = { name: (s.form.get('name') ?? '').trim(), team: s.form.get('team') ?? '' };
  const r = await actOrRerender({ form: 'create', fields: ['name', 'team'], values }, () => newApp(ctx, s.principal, { name: values.name || undefined, team: values.team || undefined }), (status, state) => renderApps(ctx, s, status, state));
  if (r) done(s, `/apps/${r.value.name}`, 'app-created');
});

/** The size choices of a formation entry: the known sizes, and its current one when it is not among them. */
function sizeChoices(current: string): Array<{ value: string; selected: boolean }> {
  const known: string[] = [...DYNO_SIZES];
  return (known.includes(current) ? known : [current, ...known]).map((v) => ({ value: v, selected: v === current }));
}

async function renderApp(ctx: AuthContext, s: Signed, app: AppRecord, status: number, state: FormState | null): Promise<void> {
  const releases = await Promise.all((await ctx.releases.list(app.id)).slice().reverse().map(async (r) => ({
    version: r.version, description: r.description, current: r.version === (app.releaseVersion ?? 0), who: (await ctx.accounts.get(r.userId))?.email ?? r.userId,
    created: when(r.createdAt), status: 'succeeded', images: Object.entries(r.images).map(([type, i]) => ({ type, image: i.configDigest.slice(0, 19) })),
  })));
  sendDashboard(ctx, s, status, 'app', 'apps', {
    title: `App ${app.name}`, notice: noticeOf(s.ex),
    app: { name: app.name, stack: app.stack, buildStack: app.buildStack, generation: app.generation, owner: await ownerOf(ctx, app), maintenance: app.maintenance === true },
    formation: (await ctx.releases.formation(app.id)).map((f) => ({
      type: f.type, quantity: f.quantity, size: f.size, sizes: sizeChoices(f.size), command: f.command, image: f.image ? f.image.slice(0, 19) : '',
    })),
    releases,
    webhooks: allowed(s, 'GET /apps/:app/webhooks') ? await webhookRows(ctx, app) : [],
    canWrite: allowed(s, 'PATCH /apps/:app/formation/:type'),
    canAddWebhook: allowed(s, 'POST /apps/:app/webhooks'),
    state: state ?? { form: '', errors: {}, values: {} },
  }, appPlace(app.name, 'overview'));
}

/** GET /apps/:app. */
export const showApp = showPage('GET /apps/:app', async (ctx, s, params) => {
  await renderApp(ctx, s, await visibleApp(ctx, s.principal, params.app!), 200, null);
});

/** POST /apps/:app/formation/:type: scale one process type. */
export const submitScale = submitForm('PATCH /apps/:app/formation/:type', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const values = { quantity: (s.form.get('quantity') ?? '').trim(), size: (s.form.get('size') ?? '').trim() };
  const r = await actOrRerender({ form: `scale-${params.type}`, fields: ['quantity', 'size'], values }, async () => {
    const type = (await ctx.releases.formationEntry(app.id, params.type!)).type;
    return ctx.releases.scale(app, [{ type, quantity: quantityOf(values.quantity || undefined, type), size: sizeOf(values.size || undefined, type) }], s.principal.accountId);
  }, (status, state) => renderApp(ctx, s, app, status, state));
  if (r) done(s, `/apps/${app.name}`, 'scaled');
});

/** POST /apps/:app/rollback (confirmed). */
export const submitRollback = submitForm('POST /apps/:app/releases', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const version = s.form.get('release') ?? '';
  if (!confirmOr(ctx, s, 'apps', { title: 'Roll back', message: `Roll ${app.name} back to release v${version}? A new release is created that runs v${version}'s images, and every process restarts.`, button: 'Roll back' })) return;
  const r = await actOrRerender({ form: 'rollback', fields: ['release'], values: { release: version } }, () => ctx.releases.rollback(app, s.account.id, version), (status, state) => renderApp(ctx, s, app, status, state));
  if (r) done(s, backTo(s.form, `/apps/${app.name}`), 'rolled-back');
});
