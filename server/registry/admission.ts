/**
 * Admission: the one check the registry dispatcher (routes.ts) runs before any handler, from
 * the action the route declares in `REGISTRY_ROUTES` (docs/architecture.md "Registry routing";
 * the rules are docs/rules.md Authentication 10). Handlers receive the admitted caller and never
 * authenticate themselves, so none can forget to.
 */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import type { AppRecord } from '../../engine/platform/records.js';
import type { RegistryAction } from '../../engine/platform/access.js';
import { authenticate, authorize, Challenge, type Caller } from './access.js';
import { andThen, type MaybePromise } from '../../engine/maybe-sync.js';
import { verifyUploadState } from './upload-state.js';

/**
 * What a route requires:
 * - `pull` / `push` / `delete`: that action on the path's repository (access.ts `authorize`);
 * - `check` (GET /v2/) and `catalog`: any valid credentials;
 * - `token` (the token endpoint): valid credentials other than a registry token.
 */
export type RouteAction = RegistryAction | 'check' | 'catalog' | 'token';

/** The outcome of admission, handed to the handler. */
export interface Admission {
  /**
   * The authenticated caller; null only on an upload-session route admitted by the
   * session's `_state` capability (no credentials are read then).
   */
  caller: Caller | null;
  /** The app owning the repository; set for pull, push and delete admitted by credentials. */
  app?: AppRecord;
}

/** The request's parts admission looks at: the repository and, on session routes, the session id. */
export interface AdmissionTarget {
  repository: string;
  /** The upload session id of a session route (route flag `session`). */
  session?: string;
}

/**
 * Admits a request to a route declaring `action`, or refuses it.
 * An upload-session route (`target.session` set) is admitted by a `_state` query value signed
 * by the server for that session and repository (the capability session Locations carry,
 * upload-state.ts), else like `push`.
 * @throws Challenge (401 with WWW-Authenticate) without valid credentials, or for a registry
 *         token lacking the action; DENIED (403) when the caller may not act on the app;
 *         NAME_INVALID for a malformed repository name (after the credentials are read).
 *         With the embedded store the admission (or refusal) is synchronous: a value, or a
 *         throw; otherwise a Promise (engine/maybe-sync.ts). Callers handle both.
 */
export function admit(ctx: RegistryContext, ex: Exchange, action: RouteAction, target: AdmissionTarget): MaybePromise<Admission> {
  if (target.session !== undefined) {
    const state = ex.query.get('_state');
    if (state && verifyUploadState(ctx.keys, target.session, target.repository, state) !== undefined) return { caller: null };
  }
  return andThen(authenticate(ctx, ex), (caller): MaybePromise<Admission> => {
    switch (action) {
      case 'check':
        if (!caller) throw new Challenge('authentication required', undefined);
        return { caller };
      case 'catalog':
        if (!caller) throw new Challenge('authentication required', 'registry:catalog:*');
        return { caller };
      case 'token':
        if (!caller || caller.tokenAccess) throw new Challenge('send your e-mail or "_" and your API key with Basic authentication', undefined);
        return { caller };
      default:
        return andThen(authorize(ctx, caller, target.repository, action), (app) => ({ caller, app }));
    }
  });
}
