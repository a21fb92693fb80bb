/**
 * Apps (docs/platform-conventions.md 3.2). Names follow the platform pattern `^[a-z][a-z0-9-]{1,28}[a-z0-9]$`;
 * an app's registry repositories are `<app name>/<process type>`.
 */
import { readMaybe, type MetadataStore } from '../storage/metadata.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { newId } from '../identity/tokens.js';
import { APP_NAME } from '../registry/names.js';
import type { AppRecord, Generation } from './records.js';
import { checkIdentifier } from '../identifiers.js';
import { apps, appsByName } from './keyspaces.js';
import { recordApp } from './events.js';
import { removeAppWebhooksInTransaction } from '../webhooks/app-webhooks.js';
import { moveRepositoriesInTransaction } from '../registry/rename.js';
import { renameReleaseRepositoriesInTransaction } from './release-repositories.js';

/** The curated stack new apps get. */
export const DEFAULT_STACK = 'heroku-24';
/** The stack of apps released from container images (docs/rules.md What the service does 5). */
export const CONTAINER_STACK = 'container';

export interface NewApp {
  name?: string;
  ownerId: string;
  teamId?: string | null;
  generation?: Generation;
  stack?: string;
  space?: string | null;
  /** The account creating it (the `api:app` event's actor); default the owner. */
  actorId?: string;
}

/**
 * `name` when it is a valid app name (the platform pattern `^[a-z][a-z0-9-]{1,28}[a-z0-9]$`), for create and rename.
 * @throws INVALID_PARAMS (422) saying the rule otherwise.
 */
export function checkAppName(name: unknown): string {
  if (typeof name !== 'string' || !APP_NAME.test(name)) {
    const shown = typeof name === 'string' ? name.slice(0, 40) : String(name).slice(0, 40);
    throw fail('INVALID_PARAMS', `Name must start with a letter, end with a letter or digit and can only contain lowercase letters, digits, and dashes (3-30 characters): "${shown}"`);
  }
  return name;
}

export class Apps {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

  /**
   * Creates an app; a name is generated when none is given.
   * @throws INVALID_PARAMS for a malformed name, CONFLICT when the name is taken.
   */
  async create(a: NewApp): Promise<AppRecord> {
    const name = checkAppName(a.name ?? `app-${newId().slice(0, 8)}`);
    if (a.generation !== undefined && a.generation !== 'cedar' && a.generation !== 'fir') {
      throw fail('INVALID_PARAMS', 'generation must be "cedar" or "fir"');
    }
    const now = this.clock.now();
    const stack = a.stack ?? DEFAULT_STACK;
    const app: AppRecord = {
      id: newId(), name, ownerId: a.ownerId, teamId: a.teamId ?? null, generation: a.generation ?? 'cedar',
      stack, buildStack: stack, space: a.space ?? null, createdAt: now, updatedAt: now,
    };
    await this.metadata.transact(async (tx) => {
      if (await tx.get(appsByName, name) !== undefined) throw fail('CONFLICT', `Name ${name} is already taken`);
      tx.put(apps, app.id, app);
      tx.put(appsByName, name, app.id);
      recordApp(tx, app.id, 'create', app, null, a.actorId ?? a.ownerId, now);
    });
    return app;
  }

  /**
   * Renames an app (PATCH /apps/{app} {name}; docs/apps.md "Renaming an app"): in one metadata
   * transaction the app record and its name index change, its registry repositories
   * `<old>/<type>` move to `<new>/<type>` with their manifests, tags and blob links
   * (engine/registry/rename.ts), its releases name the moved repositories
   * (release-repositories.ts) and an `api:app` update event with
   * `previous_data.name` is recorded — a crash leaves all old names or all new ones. The app id
   * (formation, config vars, webhooks, collaborators) does not change; the old name is free at once.
   * Renaming to the current name changes nothing.
   * @throws INVALID_PARAMS for a malformed name (as create); CONFLICT when the name is taken;
   *         NOT_FOUND when the app was deleted meanwhile.
   */
  async rename(app: AppRecord, newName: unknown, actorId: string | null): Promise<AppRecord> {
    const name = checkAppName(newName);
    const now = this.clock.now();
    const base = newId();
    return this.metadata.transact(async (tx) => {
      const current = await tx.get(apps, app.id);
      if (!current) throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
      if (current.name === name) return current;
      if (await tx.get(appsByName, name) !== undefined) throw fail('CONFLICT', `Name ${name} is already taken`);
      const updated: AppRecord = { ...current, name, updatedAt: now };
      tx.remove(appsByName, current.name);
      tx.put(appsByName, name, app.id);
      tx.put(apps, app.id, updated);
      await moveRepositoriesInTransaction(tx, current.name, name);
      await renameReleaseRepositoriesInTransaction(tx, app.id, current.name, name);
      recordApp(tx, base, 'update', updated, current, actorId, now);
      return updated;
    });
  }

  /**
   * By id or name; undefined when absent. Two reads outside a transaction (name index, record),
   * synchronous when the store reads synchronously (engine/maybe-sync.ts).
   * @throws INVALID_PARAMS for a malformed identifier (checkIdentifier).
   */
  find(idOrName: string): MaybePromise<AppRecord | undefined> {
    return andThen(readMaybe(this.metadata, appsByName, checkIdentifier('app', idOrName)), (id) => readMaybe(this.metadata, apps, id ?? idOrName));
  }

  /** Every app, in id order (callers filter by access). */
  async all(): Promise<AppRecord[]> {
    return (await this.metadata.range(apps)).map((e) => e.value);
  }

  /**
   * Removes the app record and its name (registry data is removed by the caller's Registry),
   * records `api:app` destroy by `actorId` and retires the app's webhooks, in one transaction.
   */
  async remove(app: AppRecord, actorId: string | null = null): Promise<void> {
    const now = this.clock.now();
    const base = newId();
    await this.metadata.transact(async (tx) => {
      const current = await tx.get(apps, app.id) ?? app;
      tx.remove(apps, app.id);
      tx.remove(appsByName, app.name);
      recordApp(tx, base, 'destroy', current, null, actorId, now);
      await removeAppWebhooksInTransaction(tx, app.id, now);
    });
  }
}
