/**
 * An app's config vars (docs/platform-conventions.md 3.4), the actions of GET/PATCH
 * /apps/{app}/config-vars by the same engine call (AppSettings.updateConfigVars: each change
 * makes a release, as the API's PATCH does) and the same access rules (config:read, config:write):
 *   GET  /apps/:app/config            names with values masked; add, edit, remove forms
 *   POST /apps/:app/config/reveal     the same page with the values (an explicit request; no-store)
 *   POST /apps/:app/config            set one var (add or edit: name, value)
 *   POST /apps/:app/config/remove     unset one var (confirmed)
 * Values are in a page only in the reveal response; a refused form shows its name again, never
 * the value typed. Nothing here logs a value.
 */
import type { AuthContext } from '../context.js';
import type { AppRecord } from '../../../engine/platform/records.js';
import { visibleApp } from '../../api/apps.js';
import { fail } from '../../../engine/errors.js';
import { appPlace, allowed, confirmOr, done, noticeOf, sendDashboard, type FormState, type Signed, type Submitted } from './page.js';
import { actOrRerender, showPage, submitForm } from './handler.js';

/** The refusal of a form without a name (the engine's wording for names). */
const NO_NAME = 'The config var name is missing: use letters, digits and underscores, not starting with a digit.';

/** What stands in for a value that was not revealed. */
const MASK = '••••••••';

async function render(ctx: AuthContext, s: Signed, app: AppRecord, status: number, state: FormState | null, reveal: boolean): Promise<void> {
  const readable = allowed(s, 'GET /apps/:app/config-vars');
  const vars = readable ? await ctx.settings.configVars(app) : {};
  sendDashboard(ctx, s, status, 'config-vars', 'apps', {
    title: `Config vars of ${app.name}`, notice: noticeOf(s.ex), app: { name: app.name },
    readable, revealed: reveal && readable, canWrite: allowed(s, 'PATCH /apps/:app/config-vars'),
    vars: Object.keys(vars).sort().map((k) => ({ key: k, value: reveal ? vars[k]! : MASK })),
    state: state ?? { form: '', errors: {}, values: {} },
  }, appPlace(app.name, 'config'));
}

/** GET /apps/:app/config (values masked). */
export const showConfigVars = showPage('GET /apps/:app', async (ctx, s, params) => {
  await render(ctx, s, await visibleApp(ctx, s.principal, params.app!), 200, null, false);
});

/** POST /apps/:app/config/reveal: the page with the values. */
export const submitReveal = submitForm('GET /apps/:app/config-vars', async (ctx, s, params) => {
  await render(ctx, s, await visibleApp(ctx, s.principal, params.app!), 200, null, true);
});

/**
 * Sets (`value`) or unsets (null) the config var named in the form; on a refusal the page is
 * rendered again with the name only (a value is never echoed into a page).
 */
async function changeConfigVar(ctx: AuthContext, s: Submitted, app: AppRecord, key: string, form: string, value: string | null, notice: 'config-set' | 'config-removed'): Promise<void> {
  const r = await actOrRerender({ form, fields: ['name'], values: { name: key } }, async () => {
    if (!key) throw fail('INVALID_PARAMS', NO_NAME);
    return ctx.settings.updateConfigVars(app, s.account.id, { [key]: value });
  }, (status, state) => render(ctx, s, app, status, state, false));
  if (r) done(s, `/apps/${app.name}/config`, r.value.release ? notice : 'config-unchanged');
}

/** POST /apps/:app/config: set one var (add or edit). */
export const submitSetConfigVar = submitForm('PATCH /apps/:app/config-vars', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const key = (s.form.get('name') ?? '').trim();
  await changeConfigVar(ctx, s, app, key, s.form.get('form') === 'edit' ? `edit-${key}` : 'add', s.form.get('value') ?? '', 'config-set');
});

/** POST /apps/:app/config/remove: unset one var (confirmed). */
export const submitRemoveConfigVar = submitForm('PATCH /apps/:app/config-vars', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const key = (s.form.get('name') ?? '').trim();
  if (!confirmOr(ctx, s, 'apps', {
    title: 'Remove config var', message: `Remove ${key} from ${app.name}? A new release is made without it and every process restarts.`, button: 'Remove',
  })) return;
  await changeConfigVar(ctx, s, app, key, `edit-${key}`, null, 'config-removed');
});
