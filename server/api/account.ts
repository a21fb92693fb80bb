/** GET /account (reference 3.1): needs the identity scope (or global). */
import type { Exchange } from '../http/exchange.js';
import type { ApiContext } from './context.js';
import { authenticateApi, requireScope } from './auth.js';
import { accountJson } from './serialize.js';
import { fail } from '../../engine/errors.js';
import { sendApi } from './respond.js';

export async function getAccount(ctx: ApiContext, ex: Exchange): Promise<void> {
  const p = authenticateApi(ctx, ex);
  requireScope(p, 'account:read');
  const account = ctx.accounts.get(p.accountId);
  if (!account) throw fail('UNAUTHORIZED', 'Invalid credentials provided.');
  sendApi(ctx, ex, 200, accountJson(account));
}
