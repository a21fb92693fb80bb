/**
 * An app's settings tab: renaming it, moving it into a team and deleting it, by the functions of
 * the API routes they mirror (renameApp of PATCH /apps/{app} {name}; transferApp of
 * PATCH /apps/{app} {team}; removeApp of DELETE /apps/{app}) and their access rules (the owner or
 * an admin of its team renames and deletes it; only the owner moves it):
 *   GET  /apps/:app/settings      name, owner, rename, transfer and delete forms (those the person may use)
 *   POST /apps/:app/rename        rename the app and its registry repositories (confirmed)
 *   POST /apps/:app/transfer      move a personal app into a team the person administers
 *   POST /apps/:app/delete        delete the app and its registry repositories (confirmed)
 */
import type { AuthContext } from '../context.js';
import type { AppRecord } from '../../../engine/platform/records.js';
import { removeApp, visibleApp } from '../../api/apps.js';
import { renameApp, transferApp } from '../../api/app-settings.js';
import { appRole, isOwnerLike } from '../../../engine/platform/access.js';
import { appPlace, allowed, confirmOr, done, noticeOf, sendDashboard, type FormState, type Signed } from './page.js';
import { actOrRerender, showPage, submitForm } from './handler.js';
import { ownerOf } from './app-summary.js';

async function render(ctx: AuthContext, s: Signed, app: AppRecord, status: number, state: FormState | null): Promise<void> {
  const role = await appRole(ctx.store.metadata, s.principal, app);
  const canTransfer = app.teamId === null && role === 'owner' && allowed(s, 'PATCH /apps/:app');
  sendDashboard(ctx, s, status, 'app-settings', 'apps', {
    title: `Settings of ${app.name}`, notice: noticeOf(s.ex),
    app: { name: app.name, owner: await ownerOf(ctx, app), created: new Date(app.createdAt).toISOString().slice(0, 10) },
    canRename: isOwnerLike(role) && allowed(s, 'PATCH /apps/:app'),
    canTransfer, teams: canTransfer ? (await ctx.teams.adminTeamsOf(s.account.id)).map((t) => t.name) : [],
    canDelete: isOwnerLike(role) && allowed(s, 'DELETE /apps/:app'),
    state: state ?? { form: '', errors: {}, values: {} },
  }, appPlace(app.name, 'settings'));
}

/** GET /apps/:app/settings. */
export const showAppSettings = showPage('GET /apps/:app', async (ctx, s, params) => {
  await render(ctx, s, await visibleApp(ctx, s.principal, params.app!), 200, null);
});

/** POST /apps/:app/rename (confirmed). */
export const submitRename = submitForm('PATCH /apps/:app', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const name = (s.form.get('name') ?? '').trim();
  if (!confirmOr(ctx, s, 'apps', {
    title: `Rename ${app.name}`, button: 'Rename app',
    message: `Rename ${app.name} to ${name}? Its registry repositories move with it: images are pulled and pushed as ${name}/<process-type> from now on, and ${app.name}/<process-type> stops answering (scripts, CI jobs and git remotes that use the old name need the new one). The old name becomes free for anyone to take.`,
  })) return;
  const r = await actOrRerender({ form: 'rename', fields: ['name'], values: { name } }, () => renameApp(ctx, s.principal, app, name), (status, state) => render(ctx, s, app, status, state));
  if (r) done(s, `/apps/${r.value.name}/settings`, 'renamed');
});

/** POST /apps/:app/transfer (confirmed). */
export const submitTransfer = submitForm('PATCH /apps/:app', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const team = (s.form.get('team') ?? '').trim();
  if (!confirmOr(ctx, s, 'apps', {
    title: 'Move into a team', button: 'Move app',
    message: `Move ${app.name} into team ${team}? The team's members get access to it, and you can no longer move it back yourself.`,
  })) return;
  const r = await actOrRerender({ form: 'transfer', fields: ['team'], values: { team } }, () => transferApp(ctx, s.principal, app, team), (status, state) => render(ctx, s, app, status, state));
  if (r) done(s, `/apps/${app.name}/settings`, 'transferred');
});

/** POST /apps/:app/delete (confirmed). */
export const submitDeleteApp = submitForm('DELETE /apps/:app', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  if (!confirmOr(ctx, s, 'apps', {
    title: `Delete ${app.name}`, button: 'Delete app',
    message: `Delete ${app.name}? Its releases, formation and config vars go, and so do its registry repositories (${app.name}/*): every tag and manifest at once; layers no other repository uses are freed by the next garbage collection. This cannot be undone.`,
  })) return;
  const r = await actOrRerender({ form: 'delete', fields: [], values: {} }, () => removeApp(ctx, s.principal, app), (status, state) => render(ctx, s, app, status, state));
  if (r) done(s, '/apps', 'app-deleted');
});
