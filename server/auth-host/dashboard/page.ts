/**
 * What every dashboard page and action of the auth host shares:
 * - the signed-in person (the auth host's session cookie) as a Principal with the rights of the
 *   account itself (scope `global`, no client, no team): the person who signed in with e-mail,
 *   password and second factor;
 * - the access rule of the platform API route an action mirrors (server/api/routes.ts), applied
 *   with the same function the API dispatcher uses, so there is one set of rules;
 * - CSRF on every POST, confirmation of destructive actions (a confirmation page without
 *   JavaScript; the script asks with a dialog instead), one-time forms for actions that show a
 *   secret (reloading the response never repeats the action nor shows the secret again);
 * - form errors shown next to their field in plain words.
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import type { Account } from '../../../engine/identity/records.js';
import type { WebSessionRecord } from '../../../engine/oauth/records.js';
import type { Principal } from '../../../engine/identity/authorizations.js';
import { fail, isSlipwayError, type SlipwayError } from '../../../engine/errors.js';
import { browserOf, csrfToken, csrfValid, type Browser } from '../session.js';
import { sendPage, sendRedirect } from '../views.js';
import { field, readForm } from '../forms.js';
import { apiRoute } from '../../api/routes.js';
import { requireRouteAccess } from '../../api/authenticate.js';
import { PAGE_ERRORS } from '../page-errors.js';

/** A signed-in request of the dashboard. */
export interface Signed {
  ex: Exchange;
  browser: Browser;
  account: Account;
  principal: Principal;
  /** CSRF token for forms on the page. */
  csrf: string;
  /** Path captures of the route. */
  params: Record<string, string>;
}

/** The dashboard's sections, for the navigation. */
export type Section = 'home' | 'applications' | 'clients' | 'teams' | 'apps';

/** A breadcrumb: the last one (no href) is the page itself. */
export interface Crumb { text: string; href?: string }

/**
 * The tabs of an app's pages, in order: `path` is appended to `/apps/{app}`. A module adding a
 * page to an app adds its tab here (one line) and passes its `tab` to sendDashboard's `place`.
 */
export const APP_TABS = [
  { tab: 'overview', label: 'Overview', path: '' },
  { tab: 'registry', label: 'Registry', path: '/registry' },
  { tab: 'releases', label: 'Releases', path: '/releases' },
  { tab: 'config', label: 'Config vars', path: '/config' },
  { tab: 'webhooks', label: 'Webhooks', path: '/webhooks' },
  { tab: 'settings', label: 'Settings', path: '/settings' },
] as const;

/** One of APP_TABS. */
export type AppTab = (typeof APP_TABS)[number]['tab'];

/** Where a page sits below its section: breadcrumbs, and the app whose tabs to show. */
export interface Place {
  crumbs?: Crumb[];
  app?: { name: string; tab: AppTab };
}

/** The place of an app's page: Apps › {app} › {tab label}, with the app's tabs. */
export function appPlace(app: string, tab: AppTab): Place {
  const label = APP_TABS.find((t) => t.tab === tab)!.label;
  const crumbs: Crumb[] = [{ text: 'Apps', href: '/apps' }, tab === 'overview' ? { text: app } : { text: app, href: `/apps/${app}` }];
  if (tab !== 'overview') crumbs.push({ text: label });
  return { crumbs, app: { name: app, tab } };
}

/** A form's errors by field name ('' = the form as a whole) and the values to show again. */
export interface FormState {
  /** Which form on the page the state belongs to. */
  form: string;
  errors: Record<string, string>;
  values: Record<string, string>;
}

/**
 * The principal of a signed-in person: the account's own rights, limited to the session's scopes
 * after a read-only sign-in (then the API's scope rules refuse every change, as for a `read` token).
 */
export function sessionPrincipal(account: Account, session: WebSessionRecord): Principal {
  return { accountId: account.id, authorizationId: `session:${session.id}`, kind: 'web', scope: session.scope ?? ['global'], clientId: null, teamId: null };
}

/**
 * The signed-in person of a page request, or null after redirecting to sign-in (which comes back
 * here afterwards).
 */
export async function signedInPage(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<Signed | null> {
  const browser = await browserOf(ctx, ex, true);
  if (!browser.signedIn) {
    const back = ex.path + (ex.query.size > 0 ? '?' + ex.query.toString() : '');
    sendRedirect(ex, 302, '/login?' + new URLSearchParams({ return_to: back }).toString(), browser.setCookie);
    return null;
  }
  const { account, session } = browser.signedIn;
  return { ex, browser, account, principal: sessionPrincipal(account, session), csrf: csrfToken(ctx, browser), params };
}

/** A POSTed dashboard form after its CSRF and session checks. */
export interface Submitted extends Signed {
  form: URLSearchParams;
  /** True when the person confirmed a destructive action. */
  confirmed: boolean;
}

/**
 * Reads a dashboard form post.
 * @throws DENIED (403 page) for a missing or foreign CSRF token; UNAUTHORIZED (401 page) when
 *         the session has ended.
 */
export async function submitted(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<Submitted> {
  const form = await readForm(ex);
  const browser = await browserOf(ctx, ex, false);
  if (!csrfValid(ctx, browser, field(form, '_csrf'))) throw fail('DENIED', 'This form expired or came from another site. Go back, reload the page and try again.');
  if (!browser.signedIn) throw fail('UNAUTHORIZED', 'Your session has ended. Sign in again and repeat the action.');
  const { account, session } = browser.signedIn;
  return {
    ex, browser, account, principal: sessionPrincipal(account, session), csrf: csrfToken(ctx, browser), params, form, confirmed: field(form, 'confirmed') === 'yes',
  };
}

/**
 * Applies the access rule of the platform API route `METHOD /path/pattern` that this dashboard
 * action performs. @throws DENIED as the API would.
 */
export function mirror(s: Signed, route: string): void {
  const space = route.indexOf(' ');
  requireRouteAccess(s.principal, apiRoute(route.slice(0, space), route.slice(space + 1)));
}

/** True when `p` may do what API route `route` allows (e.g. see config vars). */
export function allowed(s: Signed, route: string): boolean {
  try {
    mirror(s, route);
    return true;
  } catch (e) {
    if (isSlipwayError(e) && e.code === 'DENIED') return false;
    throw e;
  }
}

/**
 * Renders a dashboard page with its navigation: the header's sections (`section` marked as the
 * current one), and, from `place`, breadcrumbs and an app's tabs.
 */
export function sendDashboard(
  ctx: AuthContext, s: Signed, status: number, template: Parameters<AuthContext['views']['render']>[0], section: Section, data: Record<string, unknown>, place: Place = {},
): void {
  const appTabs = place.app ? {
    app: place.app.name,
    tabs: APP_TABS.map((t) => ({ label: t.label, href: `/apps/${place.app!.name}${t.path}`, current: t.tab === place.app!.tab })),
  } : null;
  const html = ctx.views.render(template, { ...data, nav: { section, email: s.account.email, csrf: s.csrf, crumbs: place.crumbs ?? [], appTabs, readOnly: s.browser.signedIn?.session.scope !== undefined }, csrf: s.csrf });
  sendPage(s.ex, status, html, s.browser.setCookie);
}

/**
 * Asks for confirmation of a destructive action unless it was given: renders a page repeating
 * the form with `confirmed=yes`. @returns true when the action may proceed.
 */
export function confirmOr(ctx: AuthContext, s: Submitted, section: Section, what: { title: string; message: string; button: string }): boolean {
  if (s.confirmed) return true;
  const hidden = [...s.form.entries()].filter(([k]) => k !== '_csrf' && k !== 'confirmed');
  sendDashboard(ctx, s, 200, 'confirm', section, { title: what.title, message: what.message, button: what.button, action: s.ex.path, hidden, back: backTo(s.form) });
  return false;
}

/** Notices shown after a redirect, by key (never text from the URL). */
export const NOTICES: Record<string, string> = {
  revoked: 'Revoked. Its tokens stopped working at once.',
  saved: 'Saved.',
  deleted: 'Deleted. Its secret and every authorization issued to it stopped working.',
  'team-created': 'Team created. You are its admin.',
  'member-saved': 'Member saved.',
  'member-removed': 'Member removed.',
  'third-party-on': 'Third-party applications can reach this team again.',
  'third-party-off': 'Third-party applications can no longer reach this team\'s apps.',
  scaled: 'Formation updated.',
  'rolled-back': 'Rolled back: a new release runs the chosen release\'s images.',
  'app-created': 'App created. Push an image to it and release it to run something.',
  'app-deleted': 'App deleted, with its registry repositories.',
  transferred: 'The app now belongs to the team.',
  renamed: 'The app and its registry repositories have their new name.',
  'config-set': 'Config var saved: a new release was made with it.',
  'config-removed': 'Config var removed: a new release was made without it.',
  'config-unchanged': 'Nothing changed, so no release was made.',
  'tag-deleted': 'Tag deleted. The image stays; pull it by digest.',
  'image-deleted': 'Image deleted with its tags. GC frees the blobs no other image uses.',
  'webhook-created': 'Webhook added. Deliveries are signed with the secret you gave.',
  'webhook-saved': 'Webhook saved.',
  'webhook-removed': 'Webhook removed: it receives no more events, and its pending deliveries are skipped.',
};

/** The notice of a page's `?notice=` key, or ''. */
export function noticeOf(ex: Exchange): string {
  return NOTICES[ex.query.get('notice') ?? ''] ?? '';
}

/** A dashboard path a form may return to after an action (no other host, no scheme). */
export function backTo(form: URLSearchParams, fallback = '/account/applications'): string {
  const raw = form.get('back');
  return raw && /^\/(account|teams|apps)(\/[A-Za-z0-9._~%-]*)*$/.test(raw) ? raw : fallback;
}

/** Redirects (303) after a successful action, with a notice. */
export function done(s: Signed, path: string, notice: keyof typeof NOTICES): void {
  sendRedirect(s.ex, 303, `${path}?notice=${notice}`);
}

/**
 * The field a domain error is about: the first of `fields` its message starts with or names
 * in its first words; '' (the whole form) when none.
 */
export function fieldOf(e: SlipwayError, fields: readonly string[]): string {
  const m = e.message.toLowerCase();
  return fields.find((f) => m.startsWith(f.toLowerCase()) || m.startsWith(f.replace(/_/g, ' '))) ?? fields.find((f) => m.includes(f.toLowerCase())) ?? '';
}

/** How a form names the API fields that engine messages start with. */
const FIELD_WORDS: Record<string, string> = {
  name: 'The name', redirect_uri: 'The redirect URI', description: 'The description', scope: 'Scope', expires_in: 'The expiry',
  expiry_days: 'The expiry', email: 'The e-mail', role: 'The role', quantity: 'The quantity', size: 'The size', release: 'The release', team: 'The team',
  url: 'The URL', level: 'The level', include: 'The entity list', secret: 'The secret', authorization: 'The authorization header',
};

/** An engine message in the form's words: a leading API field name becomes the field's label. */
export function plainMessage(message: string, field: string): string {
  const words = FIELD_WORDS[field];
  return words && message.startsWith(field + ' ') ? words + message.slice(field.length) : message;
}

/**
 * Runs an action; a request error (4xx) becomes a FormState to render next to its field.
 * Other errors propagate (the host's error page).
 */
export async function attempt<T>(form: string, fields: readonly string[], values: Record<string, string>, run: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; state: FormState; status: number }> {
  try {
    return { ok: true, value: await run() };
  } catch (e) {
    if (!isSlipwayError(e)) throw e;
    const status = PAGE_ERRORS[e.code].status;
    if (status >= 500 || e.code === 'UNAUTHORIZED') throw e;
    const field = fieldOf(e, fields);
    return { ok: false, status, state: { form, errors: { [field]: plainMessage(e.message, field) }, values } };
  }
}

/**
 * Claims the `_once` value of a secret-showing form (cluster-wide, engine/oauth/once-forms.ts);
 * on a repeat, renders a page saying the secret is not shown again. @returns true when the action may proceed.
 */
export async function firstSubmission(ctx: AuthContext, s: Submitted, section: Section): Promise<boolean> {
  if (await ctx.oauth.onceForms.claim(field(s.form, '_once'))) return true;
  sendDashboard(ctx, s, 409, 'message', section, {
    title: 'Already done', heading: 'Already done', error: true,
    message: 'This form was already sent (perhaps the page was reloaded). Nothing was changed again, and a secret is shown only once: if you did not copy it, regenerate it.',
    link: { href: backTo(s.form), text: 'Back' },
  });
  return false;
}

/** Shows a secret once: the one response that contains it (no-store, like every page). */
export function showSecret(ctx: AuthContext, s: Signed, section: Section, data: { title: string; message: string; label: string; secret: string; extra?: Array<[string, string]>; back: string }): void {
  sendDashboard(ctx, s, 200, 'secret', section, data);
}

/** Formats ms since epoch for tables: `2026-01-05 09:00 UTC`; '' for null. */
export function when(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
}
