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

export class Apps {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

  /**
   * Creates an app; a name is generated when none is given.
   * @throws INVALID_PARAMS for a malformed name, CONFLICT when the name is taken.
   */
  async create(a: NewApp): Promise<AppRecord> {
    const name = a.name ?? `app-${newId().slice(0, 8)}`;
    if (!APP_NAME.test(name)) {
      throw fail('INVALID_PARAMS', `Name must start with a letter, end with a letter or digit and can only contain lowercase letters, digits, and dashes (3-30 characters): "${name.slice(0, 40)}"`);
    }
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
