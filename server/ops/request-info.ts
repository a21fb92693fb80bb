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

/** An exchange with slots for its caller and route (server/ops/observe.ts declares them up front). */
type Noted = Exchange & { caller?: CallerIds; route?: string };

/** Notes the authenticated caller of `ex` on the exchange itself (a field, cheaper than a WeakMap). */
export function noteCaller(ex: Exchange, caller: CallerIds): void {
  (ex as Noted).caller = caller;
}

/** The caller noted for `ex`, if any. */
export function callerOf(ex: Exchange): CallerIds | undefined {
  return (ex as Noted).caller;
}

/**
 * Notes the route pattern the host's dispatcher matched for `ex.path` (a registry pattern such as
 * `/v2/:name/blobs/:digest`), so the access log and metrics label the request without matching
 * its path a second time (server/ops/routes.ts `routeTemplate`).
 */
export function noteRoute(ex: Exchange, pattern: string): void {
  (ex as Noted).route = pattern;
}

/** The route pattern noted for `ex`, if any. */
export function routeOf(ex: Exchange): string | undefined {
  return (ex as Noted).route;
}
