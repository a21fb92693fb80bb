/**
 * The OAuth web-flow host ({auth_url}): route table and dispatch. Pages answer errors with an
 * HTML page; the token endpoint with RFC 6749 §5.2 JSON; metadata and health with JSON.
 */
import type { Exchange } from '../http/exchange.js';
import type { AuthContext } from './context.js';
import { Router } from '../http/router.js';
import { isSlipwayError } from '../../engine/errors.js';
import { PAGE_ERRORS } from './page-errors.js';
import { sendJson } from '../http/respond.js';
import { sendPage } from './views.js';
import { showSignIn, showSignOut, submitSignIn, submitSignOut } from './sign-in.js';
import { showAuthorize, submitAuthorize } from './authorize.js';
import { handleToken } from './token.js';
import { pollCliLogin, showCliLogin, startCliLogin, submitCliLogin } from './cli-login.js';
import { authorizationServerMetadata } from './metadata.js';
import { addDashboardRoutes } from './dashboard/routes.js';
import { showHome } from './dashboard/home.js';

type AuthHandler = (ctx: AuthContext, ex: Exchange, params: Record<string, string>) => Promise<void>;

const health: AuthHandler = async (_ctx, ex) => sendJson(ex, 200, { status: 'ok' }, { 'request-id': ex.id });

const metadata: AuthHandler = async (ctx, ex) => sendJson(ex, 200, authorizationServerMetadata(ctx), { 'cache-control': 'public, max-age=3600', 'request-id': ex.id });

/** A static asset of the pages (stylesheets, the progressive-enhancement script). */
function asset(type: string, text: (ctx: AuthContext) => string): AuthHandler {
  return async (ctx, ex) => {
    const body = text(ctx);
    ex.send(200, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' }, body, Buffer.byteLength(body));
  };
}

export const authRouter = new Router<AuthHandler>()
  .add('GET', '/', showHome)
  .add('GET', '/login', showSignIn)
  .add('POST', '/login', submitSignIn)
  .add('GET', '/logout', showSignOut)
  .add('POST', '/logout', submitSignOut)
  .add('GET', '/oauth/authorize', showAuthorize)
  .add('POST', '/oauth/authorize', submitAuthorize)
  .add('POST', '/oauth/token', handleToken)
  .add('POST', '/auth', startCliLogin)
  .add('GET', '/auth/cli/browser/:id', showCliLogin)
  .add('POST', '/auth/cli/browser/:id', submitCliLogin)
  .add('GET', '/auth/cli/poll/:id', pollCliLogin)
  .add('GET', '/.well-known/oauth-authorization-server', metadata)
  .add('GET', '/assets/base.css', asset('text/css', (ctx) => ctx.views.baseCss))
  .add('GET', '/assets/site.css', asset('text/css', (ctx) => ctx.views.css))
  .add('GET', '/assets/dashboard.js', asset('text/javascript', (ctx) => ctx.views.script))
  .add('GET', '/health', health);
addDashboardRoutes(authRouter);

/** An HTML error page for a failure that escaped a page handler. */
export function sendAuthError(ctx: AuthContext, ex: Exchange, e: unknown): void {
  if (ex.responded || ex.aborted) return;
  let status = 500;
  let heading = 'Request refused';
  let message = 'Something went wrong on our side. Please try again.';
  const headers: Record<string, string> = {};
  if (isSlipwayError(e)) {
    ({ status, heading } = PAGE_ERRORS[e.code]);
    message = e.message;
    const retryAfter = (e.detail as { retryAfter?: unknown } | undefined)?.retryAfter;
    if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
  } else {
    ctx.log.error({ err: e, reqId: ex.id, path: ex.path }, 'auth request failed');
  }
  const html = ctx.views.render('message', { title: 'Error', heading, message, error: true, requestId: ex.id });
  sendPage(ex, status, html, headers);
}

export async function handleAuth(ctx: AuthContext, ex: Exchange): Promise<void> {
  try {
    const m = authRouter.match(ex.method, ex.path);
    if (m.kind === 'found') return await m.value(ctx, ex, m.params);
    // The token endpoint answers every method, so a GET gets an RFC 6749 error rather than a page.
    if (ex.path === '/oauth/token') return await handleToken(ctx, ex);
    const status = m.kind === 'not-found' ? 404 : 405;
    const message = m.kind === 'not-found' ? `There is no page at ${ex.path.slice(0, 200)}.` : `${ex.method} is not allowed here; allowed: ${m.allowed.join(', ')}.`;
    const html = ctx.views.render('message', { title: 'Not found', heading: status === 404 ? 'Not found' : 'Method not allowed', message, error: true });
    sendPage(ex, status, html, m.kind === 'method-not-allowed' ? { allow: m.allowed.join(', ') } : {});
  } catch (e) {
    sendAuthError(ctx, ex, e);
  }
}
