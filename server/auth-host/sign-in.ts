/**
 * Sign-in and sign-out pages of the auth host (docs/rules.md Authentication 4; docs/platform-conventions.md 2.6):
 *   GET  /login   the form: e-mail, password, 6-digit TOTP code (all required)
 *   POST /login   checks them (engine/oauth/sign-in.ts: scrypt off the event loop, lockout),
 *                 starts a session under a new cookie value, returns to /oauth/authorize
 *   GET  /logout  a confirmation form (a GET never signs out: links cannot be forged into it)
 *   POST /logout  ends the session
 *   GET  /        the dashboard home (dashboard/home.ts)
 */
import { showHome } from './dashboard/home.js';
import type { Exchange } from '../http/exchange.js';
import type { AuthContext } from './context.js';
import { READ_ONLY_SCOPE, browserOf, clearedCookie, csrfToken, csrfValid, sessionCookie, type Browser } from './session.js';
import { sendPage, sendRedirect } from './views.js';
import { field, readForm } from './forms.js';
import { SIGN_IN_LOCKOUT_MS } from '../../engine/oauth/limits.js';

/**
 * Where to go after sign-in: only the authorize endpoint, a CLI login's confirmation page or a
 * dashboard page of this host, so the parameter cannot send users elsewhere (open redirect).
 */
export function safeReturnTo(raw: string | null): string {
  return raw && raw.length <= 4000 && /^\/(oauth\/authorize|auth\/cli\/browser|account|teams|apps)(\/[A-Za-z0-9._~%-]+)*(\?[^\s#\\]*)?$/.test(raw) ? raw : '/';
}

function signInPage(ctx: AuthContext, ex: Exchange, browser: Browser, status: number, data: { returnTo: string; email?: string; error?: string }): void {
  const html = ctx.views.render('sign-in', { title: 'Sign in', csrf: csrfToken(ctx, browser), email: data.email ?? '', returnTo: data.returnTo, error: data.error ?? '' });
  sendPage(ex, status, html, browser.setCookie);
}

export async function showSignIn(ctx: AuthContext, ex: Exchange): Promise<void> {
  const browser = await browserOf(ctx, ex, true);
  const returnTo = safeReturnTo(ex.query.get('return_to'));
  if (browser.signedIn) return sendRedirect(ex, 302, returnTo);
  signInPage(ctx, ex, browser, 200, { returnTo });
}

function minutes(ms: number): number {
  return Math.ceil(ms / 60_000);
}

export async function submitSignIn(ctx: AuthContext, ex: Exchange): Promise<void> {
  const browser = await browserOf(ctx, ex, true);
  const form = await readForm(ex);
  const returnTo = safeReturnTo(field(form, 'return_to'));
  if (!csrfValid(ctx, browser, field(form, '_csrf'))) {
    return signInPage(ctx, ex, browser, 403, { returnTo, error: 'This sign-in form expired or came from another site. Please try again.' });
  }
  const email = (field(form, 'email') ?? '').trim();
  const password = field(form, 'password') ?? '';
  const code = (field(form, 'code') ?? '').replace(/\s+/g, '');
  if (!email || !password || !code) {
    return signInPage(ctx, ex, browser, 400, { returnTo, email, error: 'E-mail, password and authentication code are all required.' });
  }
  const result = await ctx.oauth.signIn.attempt(email, password, code);
  if (result.ok) {
    const { value } = await ctx.oauth.sessions.create(result.account.id, field(form, 'read_only') === 'yes' ? READ_ONLY_SCOPE : undefined);
    ctx.log.info({ reqId: ex.id, accountId: result.account.id }, 'signed in');
    return sendRedirect(ex, 303, returnTo, sessionCookie(ctx, value));
  }
  ctx.log.info({ reqId: ex.id, email: email.slice(0, 320), reason: result.reason }, 'sign-in refused');
  if (result.reason === 'locked') {
    const until = new Date(result.until).toISOString().slice(11, 16);
    return signInPage(ctx, ex, browser, 429, {
      returnTo, email,
      error: `Too many failed sign-ins for this e-mail address. Sign-in is paused for ${minutes(SIGN_IN_LOCKOUT_MS)} minutes, until ${until} UTC; your password was not checked.`,
    });
  }
  const left = result.attemptsLeft;
  signInPage(ctx, ex, browser, 401, {
    returnTo, email,
    error: `The e-mail, password or authentication code is wrong. ${left} more ${left === 1 ? 'failure' : 'failures'} and sign-in pauses for ${minutes(SIGN_IN_LOCKOUT_MS)} minutes.`,
  });
}

/** GET /logout: the home page, whose header has the sign-out button (signing out is a POST). */
export async function showSignOut(ctx: AuthContext, ex: Exchange): Promise<void> {
  return showHome(ctx, ex, {});
}

export async function submitSignOut(ctx: AuthContext, ex: Exchange): Promise<void> {
  const browser = await browserOf(ctx, ex, false);
  const form = await readForm(ex);
  if (!csrfValid(ctx, browser, field(form, '_csrf'))) {
    const html = ctx.views.render('message', { title: 'Not signed out', heading: 'Not signed out', message: 'This sign-out form expired or came from another site.', error: true, link: { href: '/', text: 'Back' } });
    return sendPage(ex, 403, html);
  }
  await ctx.oauth.sessions.destroy(browser.value);
  const html = ctx.views.render('message', { title: 'Signed out', heading: 'Signed out', message: 'You are signed out.', link: { href: '/login', text: 'Sign in again' } });
  sendPage(ex, 200, html, clearedCookie(ctx));
}
