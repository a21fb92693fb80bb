/**
 * The platform's events for the transactional outbox (engine/webhooks/outbox.ts; docs/webhooks.md):
 * `api:release`, `api:formation` and `api:app` events built from the records a transaction
 * writes, recorded in that same transaction. Event data are the records themselves (the API
 * layer renders them in the platform's shapes), never config vars: a release's `config` is left out.
 */
import type { MetadataTransaction } from '../storage/metadata.js';
import { derivedId, recordEvent } from '../webhooks/outbox.js';
import type { AppRecord, FormationRecord, ReleaseRecord } from './records.js';

/** The app as an event names it. */
type AppRef = Pick<AppRecord, 'id' | 'name'>;

/** Records `api:release` create for `release` (its config vars left out). `base`: an id chosen before `transact`. */
export function recordRelease(tx: MetadataTransaction, base: string, app: AppRef, release: ReleaseRecord, actorId: string | null): void {
  const { config: _config, ...data } = release;
  recordEvent(tx, { id: derivedId(base, 'release'), entity: 'api:release', action: 'create', appId: app.id, appName: app.name, actorId, data, previousData: null, createdAt: release.createdAt });
}

/** The fields of `before` whose values differ in `after` (the platform's `previous_data`). */
export function changedFields<T extends object>(before: T, after: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k of Object.keys(before) as Array<keyof T>) {
    if (k !== 'updatedAt' && JSON.stringify(before[k]) !== JSON.stringify(after[k])) out[k] = before[k];
  }
  return out;
}

/**
 * Records `api:formation` for one entry: create (no `before`), update (only when a field other
 * than `updatedAt` changed) or destroy (`after` null).
 */
export function recordFormation(tx: MetadataTransaction, base: string, app: AppRef, before: FormationRecord | undefined, after: FormationRecord | null, actorId: string | null, now: number): void {
  const entry = after ?? before;
  if (!entry) return;
  const action = after === null ? 'destroy' : before === undefined ? 'create' : 'update';
  const previousData = action === 'update' ? changedFields(before!, after!) : null;
  if (previousData !== null && Object.keys(previousData).length === 0) return;
  recordEvent(tx, { id: derivedId(base, 'formation', entry.type), entity: 'api:formation', action, appId: app.id, appName: app.name, actorId, data: entry, previousData, createdAt: now });
}

/** Records `api:app` create, update (with the changed fields' previous values) or destroy. */
export function recordApp(tx: MetadataTransaction, base: string, action: 'create' | 'update' | 'destroy', app: AppRecord, before: AppRecord | null, actorId: string | null, now: number): void {
  const previousData = action === 'update' && before ? changedFields(before, app) : null;
  recordEvent(tx, { id: derivedId(base, 'app'), entity: 'api:app', action, appId: app.id, appName: app.name, actorId, data: app, previousData, createdAt: now });
}

/** Records `api:formation` events for every entry that `before` and `after` (an app's formation) differ in. */
export function recordFormationChanges(tx: MetadataTransaction, base: string, app: AppRef, before: FormationRecord[], after: FormationRecord[], actorId: string | null, now: number): void {
  const old = new Map(before.map((f) => [f.type, f]));
  for (const f of after) {
    recordFormation(tx, base, app, old.get(f.type), f, actorId, now);
    old.delete(f.type);
  }
  for (const f of old.values()) recordFormation(tx, base, app, f, null, actorId, now);
}
