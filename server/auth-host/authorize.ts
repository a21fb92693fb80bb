/**
 * The authorization endpoint (docs/rules.md Endpoints 1; RFC 6749 §4.1.1-4.1.2; RFC 7636):
 *   GET  /oauth/authorize  validate → sign in if needed → consent page (or, for a trusted
 *                          first-party client with no owner to choose, straight to the code)
 *   POST /oauth/authorize  the consent form: CSRF-checked, re-validated, then `code` + `state`
 *                          (Allow) or `error=access_denied` + `state` (Deny) at the redirect URI.
 * Consent is asked every time for third-party clients (our decision: no silent re-approval).
 */
import type { Exchange } from '../http/exchange.js';
import type { AuthContext } from './context.js';
import { READ_ONLY_REFUSAL, browserOf, csrfToken, csrfValid, limitedSession, type Browser } from './session.js';
import { sendPage, sendRedirect } from './views.js';
import { field, readForm } from './forms.js';
import { checkAuthorizeRequest, codeRedirect, errorRedirect, type AuthorizeRequest } from './authorize-request.js';
import { SCOPE_DESCRIPTIONS } from '../../engine/identity/scope.js';
import { PERSONAL_OWNER, resolveOwner } from '../../engine/oauth/owners.js';
import type { Account } from '../../engine/identity/records.js';

function errorPage(ctx: AuthContext, ex: Exchange, status: number, message: string): void {
  const html = ctx.views.render('message', { title: 'Authorization failed', heading: 'Authorization failed', message, error: true, requestId: ex.id });
  sendPage(ex, status, html);
}

/** Owner choices of the consent page: the personal account, then teams the user administers. */
async function owners(ctx: AuthContext, account: Account): Promise<Array<{ value: string; label: string }>> {
  return [
    { value: PERSONAL_OWNER, label: `Personal account (${account.email})` },
    ...(await ctx.oauth.teams.adminTeamsOf(account.id)).map((t) => ({ value: t.id, label: `Team ${t.name}` })),
  ];
}

async function issue(ctx: AuthContext, req: AuthorizeRequest, accountId: string, teamId: string | null): Promise<string> {
  const code = await ctx.oauth.authorizationCodes.issue({
    clientId: req.client.id, accountId, teamId, scope: req.scope, redirectUri: req.redirectUri,
    redirectUriGiven: req.redirectUriGiven, codeChallenge: req.codeChallenge,
  });
  return codeRedirect(req, code);
}

async function consentPage(ctx: AuthContext, ex: Exchange, browser: Browser, account: Account, req: AuthorizeRequest): Promise<void> {
  const redirect = new URL(req.redirectUri);
  const html = ctx.views.render('consent', {
    title: `Authorize ${req.client.name}`,
    client: req.client,
    account,
    redirectHost: redirect.host,
    scopes: req.scope.map((s) => ({ name: s, description: SCOPE_DESCRIPTIONS[s] })),
    hidden: req.params,
    owners: await owners(ctx, account),
    csrf: csrfToken(ctx, browser),
  });
  sendPage(ex, 200, html, browser.setCookie, redirect.origin);
}

export async function showAuthorize(ctx: AuthContext, ex: Exchange): Promise<void> {
  const check = await checkAuthorizeRequest(ctx.oauth.clients, ex.query);
  if (check.kind === 'page') return errorPage(ctx, ex, 400, check.message);
  if (check.kind === 'redirect') return sendRedirect(ex, 302, check.location);
  const req = check.request;
  const browser = await browserOf(ctx, ex, true);
  if (!browser.signedIn) {
    const query = new URLSearchParams(req.params).toString();
    return sendRedirect(ex, 302, '/login?' + new URLSearchParams({ return_to: '/oauth/authorize?' + query }).toString(), browser.setCookie);
  }
  if (limitedSession(browser)) return errorPage(ctx, ex, 403, READ_ONLY_REFUSAL);
  const { account } = browser.signedIn;
  if (req.client.trusted && (await ctx.oauth.teams.adminTeamsOf(account.id)).length === 0) {
    return sendRedirect(ex, 302, await issue(ctx, req, account.id, null));
  }
  await consentPage(ctx, ex, browser, account, req);
}

export async function submitAuthorize(ctx: AuthContext, ex: Exchange): Promise<void> {
  const form = await readForm(ex);
  const browser = await browserOf(ctx, ex, false);
  if (!csrfValid(ctx, browser, field(form, '_csrf'))) {
    return errorPage(ctx, ex, 403, 'This consent form expired or came from another site. Go back to the application and start again.');
  }
  if (!browser.signedIn) return errorPage(ctx, ex, 401, 'Your session ended before you answered. Go back to the application and start again.');
  if (limitedSession(browser)) return errorPage(ctx, ex, 403, READ_ONLY_REFUSAL);
  const check = await checkAuthorizeRequest(ctx.oauth.clients, form);
  if (check.kind === 'page') return errorPage(ctx, ex, 400, check.message);
  if (check.kind === 'redirect') return sendRedirect(ex, 303, check.location);
  const req = check.request;
  const decision = field(form, 'decision');
  if (decision === 'deny') return sendRedirect(ex, 303, errorRedirect(req, 'access_denied', 'The user denied the request.'));
  if (decision !== 'allow') return errorPage(ctx, ex, 400, 'Choose Allow or Deny.');
  const { account } = browser.signedIn;
  const teamId = await resolveOwner(ctx.oauth.teams, account.id, field(form, 'owner') ?? PERSONAL_OWNER);
  if (teamId === undefined) return errorPage(ctx, ex, 400, 'You cannot choose that owner for the authorization.');
  ctx.log.info({ reqId: ex.id, accountId: account.id, clientId: req.client.id, scope: req.scope }, 'authorization approved');
  sendRedirect(ex, 303, await issue(ctx, req, account.id, teamId));
}
