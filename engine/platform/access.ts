/**
 * Who may do what to an app: used by the platform API and the registry alike, so one rule
 * decides both. The owner has full access; teams (issue 4) extend `appRole`.
 */
import type { Principal } from '../auth/authorizations.js';
import { allows } from '../auth/scope.js';
import type { AppRecord } from './records.js';

/** A caller's standing on an app, before scopes are considered. */
export type AppRole = 'owner' | 'none';

export function appRole(p: Principal, app: AppRecord): AppRole {
  return app.ownerId === p.accountId ? 'owner' : 'none';
}

/** Registry actions (distribution token scope actions). */
export type RegistryAction = 'pull' | 'push' | 'delete';

/** True when the principal's role and scopes permit `action` on the app's repositories. */
export function mayUseRepository(p: Principal, app: AppRecord, action: RegistryAction): boolean {
  if (appRole(p, app) === 'none') return false;
  return allows(p.scope, action === 'pull' ? 'apps:read' : 'apps:write');
}
