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

const callers = new WeakMap<Exchange, CallerIds>();

/** Notes the authenticated caller of `ex` (kept only while the exchange lives). */
export function noteCaller(ex: Exchange, caller: CallerIds): void {
  callers.set(ex, caller);
}

/** The caller noted for `ex`, if any. */
export function callerOf(ex: Exchange): CallerIds | undefined {
  return callers.get(ex);
}
