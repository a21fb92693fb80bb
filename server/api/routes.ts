/** The platform API host: route table and dispatch. */
import type { Exchange } from '../http/exchange.js';
import type { ApiContext } from './context.js';
import { Router } from '../http/router.js';
import { fail } from '../../engine/errors.js';
import { createApp, deleteApp, getApp, listApps } from './apps.js';
import { getAccount } from './account.js';
import { sendApiError } from './respond.js';

export const apiRouter = new Router<ApiContext>()
  .add('GET', '/account', getAccount)
  .add('POST', '/apps', createApp)
  .add('GET', '/apps', listApps)
  .add('GET', '/apps/:app', getApp)
  .add('DELETE', '/apps/:app', deleteApp);

export async function handleApi(ctx: ApiContext, ex: Exchange): Promise<void> {
  const started = performance.now();
  try {
    const m = apiRouter.match(ex.method, ex.path);
    if (m.kind === 'not-found') throw fail('NOT_FOUND', `No such endpoint: ${ex.method} ${ex.path.slice(0, 200)}`);
    if (m.kind === 'method-not-allowed') throw fail('UNSUPPORTED', `${ex.method} is not allowed here; allowed: ${m.allowed.join(', ')}`);
    await m.handler(ctx, ex, m.params);
  } catch (e) {
    sendApiError(ctx, ex, e);
  } finally {
    ctx.log.debug({ reqId: ex.id, method: ex.method, path: ex.path, status: ex.status, ms: Math.round((performance.now() - started) * 100) / 100 }, 'api request');
  }
}
