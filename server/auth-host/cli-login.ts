/**
 * `heroku login` (the platform CLI's browser login) against the auth host, in the wire shape the
 * stock CLI speaks to its login service (`HEROKU_LOGIN_HOST`), with the device-grant error names
 * of RFC 8628 §3.5:
 *   POST /auth {description}        → 201 {browser_url, cli_url, token, expires_in}
 *   GET  /auth/cli/browser/{id}     sign in (password + TOTP) if needed, then a confirmation page
 *   POST /auth/cli/browser/{id}     the confirmation form (CSRF-checked): decision=allow|deny
 *   GET  /auth/cli/poll/{id}        Authorization: Bearer <token>; held open up to
 *                                   SLIPWAY_CLI_LOGIN_POLL_WAIT seconds, then
 *     200 {access_token, expires_in, user: {id, email}, authorization: {id}}  once, after Log in
 *     503 authorization_pending (the stock CLI polls again on a status above 500)
 *     403 access_denied · 410 expired_token · 410 invalid_grant (token already handed out)
 *     404 not_found · 401 unauthorized (wrong polling token)
 * The token handed out belongs to a new direct authorization (global scope, 30 days, described
 * as the CLI described itself), created through the same engine call as
 * `POST /oauth/authorizations`. Token values are never logged.
 */
import type { Exchange } from '../http/exchange.js';
import type { AuthContext } from './context.js';
import { sendJson } from '../http/respond.js';
import { readJson } from '../api/respond.js';
import { API_ERRORS } from '../api/error-codes.js';
import { isSlipwayError } from '../../engine/errors.js';
import { READ_ONLY_REFUSAL, browserOf, csrfToken, csrfValid, limitedSession } from './session.js';
import { sendPage, sendRedirect } from './views.js';
import { field, readForm } from './forms.js';
import { CLI_LOGIN_RECHECK_MS, CLI_LOGIN_TOKEN_TTL_SECONDS } from '../../engine/oauth/limits.js';
import type { CliLogin } from '../../engine/oauth/cli-logins.js';
import { sourceKey } from '../http/client-address.js';

type Params = Record<string, string>;

const JSON_HEADERS = { 'cache-control': 'no-store', pragma: 'no-cache' };
const AGAIN = 'Run heroku login again to start a new login.';

/** Browser and poll paths of a login. */
export const cliLoginPaths = (id: string) => ({ browser: `/auth/cli/browser/${id}`, poll: `/auth/cli/poll/${id}` });

function cliError(ex: Exchange, status: number, id: string, message: string, headers: Record<string, string> = {}): void {
  sendJson(ex, status, { id, message }, { ...JSON_HEADERS, 'request-id': ex.id, ...headers });
}

function cliFailure(ctx: AuthContext, ex: Exchange, e: unknown): void {
  if (ex.responded || ex.aborted) return;
  if (isSlipwayError(e)) return cliError(ex, API_ERRORS[e.code].status, API_ERRORS[e.code].code, e.message);
  ctx.log.error({ err: e, reqId: ex.id, path: ex.path }, 'CLI login request failed');
  cliError(ex, 500, 'internal_server_error', 'Something went wrong on our side. Please try again.');
}

const utc = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
/** A short, non-secret handle of a login for logs. */
const logId = (id: string) => id.slice(0, 8);

/**
 * POST /auth {description?}: starts a login. At most SLIPWAY_CLI_LOGINS_PER_SOURCE logins of one
 * source address wait at once (docs/faults.md "CLI logins"); more get 429 `rate_limit`.
 */
export async function startCliLogin(ctx: AuthContext, ex: Exchange): Promise<void> {
  try {
    // Read before the body: some transports know the peer only while the request is open.
    const source = sourceKey(ctx.sources.of(ex.remoteAddress, ex.header('x-forwarded-for')));
    const body = await readJson(ex);
    const description = body.description ?? '';
    if (typeof description !== 'string') return cliError(ex, 422, 'invalid_params', 'description must be a string.');
    const { login, token } = await ctx.oauth.cliLogins.start(description, source);
    const paths = cliLoginPaths(login.id);
    ctx.log.info({ reqId: ex.id, login: logId(login.id), description: login.description }, 'CLI login started');
    sendJson(ex, 201, {
      browser_url: paths.browser, cli_url: paths.poll, token,
      expires_in: Math.round((login.expiresAt - login.createdAt) / 1000),
    }, { ...JSON_HEADERS, 'request-id': ex.id });
  } catch (e) {
    cliFailure(ctx, ex, e);
  }
}

function bearerOf(ex: Exchange): string | null {
  const m = /^Bearer[ \t]+([A-Za-z0-9_-]{1,128})[ \t]*$/i.exec(ex.header('authorization'));
  return m ? m[1]! : null;
}

/** GET /auth/cli/poll/{id} (Bearer polling token): waits for the browser, then answers once. */
export async function pollCliLogin(ctx: AuthContext, ex: Exchange, params: Params): Promise<void> {
  try {
    const token = bearerOf(ex);
    if (!token) return cliError(ex, 401, 'unauthorized', 'Send the polling token of this login as "Authorization: Bearer <token>".');
    const logins = ctx.oauth.cliLogins;
    const id = params.id!;
    const deadline = performance.now() + ctx.cliLoginPollMs;
    for (;;) {
      const claim = await logins.claim(id, token);
      switch (claim.kind) {
        case 'approved': return await deliver(ctx, ex, claim.login, claim.accountId);
        case 'unknown': return cliError(ex, 404, 'not_found', `There is no such CLI login: it ended long ago. ${AGAIN}`);
        case 'bad-token': return cliError(ex, 401, 'unauthorized', 'The polling token does not match this login.');
        case 'expired': return cliError(ex, 410, 'expired_token', `This login expired: it was not confirmed in the browser in time. ${AGAIN}`);
        case 'denied': return cliError(ex, 403, 'access_denied', `The login was denied in the browser. ${AGAIN}`);
        case 'used': return cliError(ex, 410, 'invalid_grant', `This login has already handed out its token (a login's token is given only once). ${AGAIN}`);
        case 'pending': break;
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        const login = (await logins.get(id))!;
        return cliError(ex, 503, 'authorization_pending',
          `Not confirmed in the browser yet. Sign in at ${ctx.urls.auth}${cliLoginPaths(id).browser} and confirm the login before ${utc(login.expiresAt)} UTC; if heroku login stopped waiting, run it again.`,
          { 'retry-after': '0' });
      }
      // Woken at once by an answer through this node; re-reads the store for one given elsewhere.
      await logins.waitForAnswer(id, Math.min(left, CLI_LOGIN_RECHECK_MS));
      // A poll whose client has gone must not claim the token: the next poll gets it.
      if (ex.aborted) return;
    }
  } catch (e) {
    cliFailure(ctx, ex, e);
  }
}

/** Creates the login's authorization and sends its access token (this poll won the claim). */
async function deliver(ctx: AuthContext, ex: Exchange, login: CliLogin, accountId: string): Promise<void> {
  const account = await ctx.accounts.get(accountId);
  if (!account) return cliError(ex, 410, 'expired_token', `The account that confirmed this login no longer exists. ${AGAIN}`);
  const issued = await ctx.oauth.authorizations.createDirect(accountId, {
    description: login.description, scope: ['global'], expires_in: CLI_LOGIN_TOKEN_TTL_SECONDS,
  });
  ctx.log.info({ reqId: ex.id, login: logId(login.id), accountId, authorizationId: issued.record.id }, 'CLI login completed');
  sendJson(ex, 200, {
    access_token: issued.accessToken.token,
    expires_in: CLI_LOGIN_TOKEN_TTL_SECONDS,
    user: { id: account.id, email: account.email },
    authorization: { id: issued.record.id },
  }, { ...JSON_HEADERS, 'request-id': ex.id });
}

function messagePage(ctx: AuthContext, ex: Exchange, status: number, heading: string, message: string, error = true): void {
  const html = ctx.views.render('message', { title: heading, heading, message, error, requestId: error ? ex.id : undefined });
  sendPage(ex, status, html);
}

/** The login in the path if it can still be answered; otherwise answers with a page and returns undefined. */
async function answerable(ctx: AuthContext, ex: Exchange, id: string): Promise<CliLogin | undefined> {
  const login = await ctx.oauth.cliLogins.get(id);
  if (!login) {
    messagePage(ctx, ex, 404, 'Unknown CLI login', `This CLI login is unknown: it ended long ago. ${AGAIN}`);
  } else if (ctx.oauth.cliLogins.expired(login)) {
    messagePage(ctx, ex, 410, 'CLI login expired', `This CLI login expired before it was confirmed. ${AGAIN}`);
  } else if (login.state !== 'pending') {
    messagePage(ctx, ex, 409, 'CLI login already answered', `This CLI login was already ${login.state === 'denied' ? 'denied' : 'confirmed'}. ${AGAIN}`);
  } else {
    return login;
  }
  return undefined;
}

/** GET /auth/cli/browser/{id}: sign-in (with return here), then the confirmation page. */
export async function showCliLogin(ctx: AuthContext, ex: Exchange, params: Params): Promise<void> {
  const login = await answerable(ctx, ex, params.id!);
  if (!login) return;
  const browser = await browserOf(ctx, ex, true);
  if (!browser.signedIn) {
    return sendRedirect(ex, 302, '/login?' + new URLSearchParams({ return_to: cliLoginPaths(login.id).browser }).toString(), browser.setCookie);
  }
  if (limitedSession(browser)) return messagePage(ctx, ex, 403, 'Not confirmed', READ_ONLY_REFUSAL);
  const html = ctx.views.render('cli-login', {
    title: 'Log in the platform CLI', id: login.id, description: login.description, email: browser.signedIn.account.email,
    days: Math.round(CLI_LOGIN_TOKEN_TTL_SECONDS / 86_400), started: utc(login.createdAt), expires: utc(login.expiresAt),
    csrf: csrfToken(ctx, browser),
  });
  sendPage(ex, 200, html, browser.setCookie);
}

/** POST /auth/cli/browser/{id} {_csrf, decision}: approves or denies the login. */
export async function submitCliLogin(ctx: AuthContext, ex: Exchange, params: Params): Promise<void> {
  const form = await readForm(ex);
  const browser = await browserOf(ctx, ex, false);
  if (!csrfValid(ctx, browser, field(form, '_csrf'))) {
    return messagePage(ctx, ex, 403, 'Not confirmed', 'This confirmation form expired or came from another site. Open the link the CLI printed again.');
  }
  if (!browser.signedIn) return messagePage(ctx, ex, 401, 'Not confirmed', 'Your session ended before you answered. Open the link the CLI printed again.');
  if (limitedSession(browser)) return messagePage(ctx, ex, 403, 'Not confirmed', READ_ONLY_REFUSAL);
  const decision = field(form, 'decision');
  if (decision !== 'allow' && decision !== 'deny') return messagePage(ctx, ex, 400, 'Not confirmed', 'Choose Log in or Deny.');
  const login = await answerable(ctx, ex, params.id!);
  if (!login) return;
  const { account } = browser.signedIn;
  const result = await ctx.oauth.cliLogins.decide(login.id, account.id, decision === 'allow');
  if (result !== 'ok') return messagePage(ctx, ex, 409, 'CLI login already answered', `This CLI login was answered elsewhere or has ended. ${AGAIN}`);
  ctx.log.info({ reqId: ex.id, login: logId(login.id), accountId: account.id, decision }, 'CLI login answered');
  if (decision === 'deny') {
    return messagePage(ctx, ex, 200, 'CLI login denied', `The platform CLI on ${login.description} was not logged in; it reports that the login was denied.`, false);
  }
  messagePage(ctx, ex, 200, 'CLI logged in', `The platform CLI on ${login.description} is being logged in as ${account.email}. You can close this window and return to your terminal.`, false);
}
