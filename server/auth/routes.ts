/**
 * The OAuth web-flow host ({auth_url}). This commit serves only the health check; sign-in,
 * consent, /oauth/authorize and /oauth/token arrive with the OAuth issue.
 */
import type { Exchange } from '../http/exchange.js';
import type { ApiContext } from '../api/context.js';
import { fail } from '../../engine/errors.js';
import { sendApi, sendApiError } from '../api/respond.js';

export async function handleAuth(ctx: ApiContext, ex: Exchange): Promise<void> {
  try {
    if (ex.path === '/health' && ex.method === 'GET') return sendApi(ctx, ex, 200, { status: 'ok' });
    throw fail('NOT_FOUND', `No such endpoint: ${ex.method} ${ex.path.slice(0, 200)}`);
  } catch (e) {
    sendApiError(ctx, ex, e);
  }
}
