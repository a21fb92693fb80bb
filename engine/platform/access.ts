/**
 * Who may do what to an app: one rule for the platform API and the registry alike.
 * - Personal apps: their owner. Team apps: the team's admins and members (docs/platform-conventions.md 3.5).
 * - Team tokens reach only their own team's apps (docs/rules.md Authentication 8).
 * - When a team turns third-party OAuth access off, tokens issued to third-party (untrusted)
 *   clients cannot reach the team's apps, repositories or releases; direct authorizations and
 *   trusted (first-party) clients keep working (docs/rules.md What the service does 4, Authentication 11, Errors 1).
 * Scopes then narrow what a reachable app allows (docs/rules.md Authentication 6).
 *
 * These checks run on every registry request, so they are written over `MaybePromise`
 * (engine/maybe-sync.ts): synchronous when the metadata store reads synchronously.
 */
import type { Principal } from '../identity/authorizations.js';
import { allows } from '../identity/scope.js';
import { findClient } from '../oauth/clients.js';
import { key, readMaybe, type MetadataReader } from '../storage/metadata.js';
import { MemoReader } from '../storage/memo-reader.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';
import type { AppRecord } from './records.js';
import { apps, memberships, teams } from './keyspaces.js';

/** What the rules read through: an open store (`engine/store.ts` Store) or any reader of it. */
export interface AccessReader {
  metadata: MetadataReader;
}

/** A caller's standing on an app, before scopes are considered. */
export type AppRole = 'owner' | 'admin' | 'member' | 'team-token' | 'none';

/** The caller's role on `app`: at most one read (the membership, for a team app and a personal token). */
export function appRole(metadata: MetadataReader, p: Principal, app: AppRecord): MaybePromise<AppRole> {
  if (app.teamId !== null) {
    if (p.teamId !== null) return p.teamId === app.teamId ? 'team-token' : 'none';
    return andThen(readMaybe(metadata, memberships, key(app.teamId, p.accountId)), (m) => m?.role ?? 'none');
  }
  if (p.teamId !== null) return 'none';
  return app.ownerId === p.accountId ? 'owner' : 'none';
}

/** True for roles that may take the owner's actions (delete, switch the stack back, move). */
export function isOwnerLike(role: AppRole): boolean {
  return role === 'owner' || role === 'admin';
}

/**
 * Why a third-party client's token may not reach this team app, or null when it may.
 * Reads the team (platform) and the client (the oauth domain's `findClient`), one read each
 * outside a transaction (a request path).
 */
export function thirdPartyBlock(store: AccessReader, p: Principal, app: AppRecord): MaybePromise<string | null> {
  const clientId = p.clientId;
  if (app.teamId === null || clientId === null) return null;
  return andThen(readMaybe(store.metadata, teams, app.teamId), (team) => {
    if (!team || team.thirdPartyOAuth) return null;
    return findClient(store.metadata, clientId).then((client) => {
      if (client?.trusted) return null;
      return `Third-party OAuth access to the resources of team ${team.name} is turned off by a team admin; this token belongs to the third-party client "${client?.name ?? 'unknown'}".`;
    });
  });
}

/** True when the caller may reach `app` at all: a role, and no third-party block. */
export function mayReachApp(store: AccessReader, p: Principal, app: AppRecord): MaybePromise<boolean> {
  return andThen(appRole(store.metadata, p, app), (role) => role !== 'none' && andThen(thirdPartyBlock(store, p, app), (blocked) => blocked === null));
}

/** Registry actions (distribution token scope actions). */
export type RegistryAction = 'pull' | 'push' | 'delete';

/** True when role, team setting and scopes permit `action` on the app's repositories. */
export function mayUseRepository(store: AccessReader, p: Principal, app: AppRecord, action: RegistryAction): MaybePromise<boolean> {
  return andThen(mayReachApp(store, p, app), (reach) => reach && allows(p.scope, action === 'pull' ? 'apps:read' : 'apps:write'));
}

/**
 * Decides `action` on the repositories of many apps for one caller within one request (the
 * catalog): the same rule as `mayUseRepository`, with the scope checked first (a token whose
 * scope does not allow the action reads nothing), each app decided at most once (one read of its
 * record), and every other record the rule reads (a team's membership, the team, the caller's
 * client) read once for the whole request (MemoReader). Create one per request.
 * @returns a function of an app id: the app when the caller may, else undefined (also for an
 *          app that no longer exists).
 */
export function repositoryAccess(store: AccessReader, p: Principal, action: RegistryAction): (appId: string) => Promise<AppRecord | undefined> {
  const scopeAllows = allows(p.scope, action === 'pull' ? 'apps:read' : 'apps:write');
  const reader = { metadata: new MemoReader(store.metadata) };
  const decided = new Map<string, Promise<AppRecord | undefined>>();
  return (appId) => {
    if (!scopeAllows) return Promise.resolve(undefined);
    let d = decided.get(appId);
    if (!d) {
      d = (async () => {
        const app = await reader.metadata.get(apps, appId);
        return app && (await mayReachApp(reader, p, app)) ? app : undefined;
      })();
      decided.set(appId, d);
    }
    return d;
  };
}
