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
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import type { AppRecord } from '../../../engine/platform/records.js';
import { visibleApp } from '../../api/apps.js';
import { fail } from '../../../engine/errors.js';
import { appPlace, attempt, allowed, confirmOr, done, mirror, noticeOf, sendDashboard, signedInPage, submitted, type FormState, type Signed } from './page.js';

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

export async function showConfigVars(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (!s) return;
  mirror(s, 'GET /apps/:app');
  await render(ctx, s, await visibleApp(ctx, s.principal, params.app!), 200, null, false);
}

export async function submitReveal(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'GET /apps/:app/config-vars');
  await render(ctx, s, await visibleApp(ctx, s.principal, params.app!), 200, null, true);
}

export async function submitSetConfigVar(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'PATCH /apps/:app/config-vars');
  const app = await visibleApp(ctx, s.principal, params.app!);
  const key = (s.form.get('name') ?? '').trim();
  const value = s.form.get('value') ?? '';
  const form = s.form.get('form') === 'edit' ? `edit-${key}` : 'add';
  // The state shown again on a refusal holds the name only: a value is never echoed into a page.
  const r = await attempt(form, ['name'], { name: key }, async () => {
    if (!key) throw fail('INVALID_PARAMS', NO_NAME);
    return ctx.settings.updateConfigVars(app, s.account.id, { [key]: value });
  });
  if (!r.ok) return await render(ctx, s, app, r.status, r.state, false);
  done(s, `/apps/${app.name}/config`, r.value.release ? 'config-set' : 'config-unchanged');
}

export async function submitRemoveConfigVar(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'PATCH /apps/:app/config-vars');
  const app = await visibleApp(ctx, s.principal, params.app!);
  const key = (s.form.get('name') ?? '').trim();
  if (!confirmOr(ctx, s, 'apps', {
    title: 'Remove config var', message: `Remove ${key} from ${app.name}? A new release is made without it and every process restarts.`, button: 'Remove',
  })) return;
  const r = await attempt(`edit-${key}`, ['name'], { name: key }, async () => {
    if (!key) throw fail('INVALID_PARAMS', NO_NAME);
    return ctx.settings.updateConfigVars(app, s.account.id, { [key]: null });
  });
  if (!r.ok) return await render(ctx, s, app, r.status, r.state, false);
  done(s, `/apps/${app.name}/config`, r.value.release ? 'config-removed' : 'config-unchanged');
}
