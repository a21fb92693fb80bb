/**
 * Who made a request, noted by the code that authenticates it and read by the access log:
 * account (principal) id and authorization id only, never a credential.
 */
import type { Exchange } from '../http/exchange.js';

/** Identifiers of the caller of one request. */
export interface CallerIds {
  accountId: string;
  authorizationId?: string | null;
}

/** An exchange with a slot for its caller (server/ops/observe.ts declares it up front). */
type Noted = Exchange & { caller?: CallerIds };

/** Notes the authenticated caller of `ex` on the exchange itself (a field, cheaper than a WeakMap). */
export function noteCaller(ex: Exchange, caller: CallerIds): void {
  (ex as Noted).caller = caller;
}

/** The caller noted for `ex`, if any. */
export function callerOf(ex: Exchange): CallerIds | undefined {
  return (ex as Noted).caller;
}
