/**
 * The transactional outbox (docs/webhooks.md "Engine"): `recordEvent` writes an event inside
 * the caller's metadata transaction, so the event exists exactly when the change it describes
 * committed (a rolled-back change records nothing, on LMDB and PostgreSQL alike). `fanOutIn`
 * (run by the delivery worker's pass, never on a request path) turns each recorded event into one
 * delivery per subscriber, in the pass's transaction, which also takes the events off the outbox.
 */
import { createHash } from 'node:crypto';
import { key, keyParts, type Entry, type MetadataStore, type MetadataTransaction } from '../storage/metadata.js';
import type { DeliveryRecord, EventRecord } from './records.js';
import type { SubscriberSource } from './sources.js';
import { deliveries, deliveriesByEvent, deliveriesByGroup, due, events, eventsByApp, eventsByTime, outbox } from './keyspaces.js';

/** A time as a key part: ms since the epoch, 15 digits, so keys sort by time. */
export function timeKey(ms: number): string {
  return String(Math.max(0, Math.floor(ms))).padStart(15, '0');
}

/** Largest event `data` (+ `previousData`) accepted, bytes of JSON: a payload is one record, not a dump. */
export const MAX_EVENT_BYTES = 256 * 1024;

const listeners = new Set<() => void>();

/**
 * Calls `fn` soon after any `recordEvent` in this process (the worker's wake-up, so a local
 * change is delivered without waiting for the next poll; other nodes' events are found by
 * polling). @returns a function that removes it.
 */
export function onEventRecorded(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/**
 * Records `event` in the transaction `tx` (the outbox write): the event record, its place in
 * the outbox, in the time index retention prunes from and in its app's event list. Call inside the `transact` body that makes the change,
 * with an `id` chosen before `transact` (the body may run more than once; the id must not change).
 * @throws RangeError when `data` is larger than MAX_EVENT_BYTES; TypeError (checkValue) when it is not plain data.
 */
export function recordEvent(tx: MetadataTransaction, event: EventRecord): void {
  const size = Buffer.byteLength(JSON.stringify([event.data ?? null, event.previousData ?? null]));
  if (size > MAX_EVENT_BYTES) throw new RangeError(`event ${event.entity} ${event.action} of ${size} bytes exceeds ${MAX_EVENT_BYTES}`);
  tx.put(events, event.id, event);
  tx.put(outbox, key(timeKey(event.createdAt), event.id), event.id);
  tx.put(eventsByTime, key(timeKey(event.createdAt), event.id), event.id);
  if (event.appId !== null) tx.put(eventsByApp, key(event.appId, timeKey(event.createdAt), event.id), event.id);
  if (listeners.size > 0) setTimeout(() => { for (const fn of listeners) fn(); }, 5).unref();
}

/**
 * The delivery id of `event` for a subscriber: a UUID-shaped SHA-256 of both ids, so a fan-out
 * run twice (two nodes, or a retried transaction) names the same delivery.
 */
export function deliveryIdOf(eventId: string, source: string, subscriberId: string): string {
  return derivedId(eventId, source, subscriberId);
}

/**
 * A UUID-shaped id derived from `parts` (SHA-256, version nibble 5): the same parts give the same
 * id, so a transaction body that runs again, or several events of one change (one base id chosen
 * before `transact`, one part per event), name their events stably.
 */
export function derivedId(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\n')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Events fanned out per pass transaction: bounds one commit's size (≤ 10 webhooks per app, 4 writes each). */
export const FAN_OUT_BATCH = 100;

/** A delivery a fan-out made: its due entry's key, id and group (so the same transaction may claim it). */
export interface NewDelivery {
  dueKey: string;
  id: string;
  group: string;
}

/** Outbox entries waiting, oldest first (at most `limit`): what `fanOutIn` takes. */
export function outboxEntries(metadata: MetadataStore, limit = FAN_OUT_BATCH): Promise<Array<Entry<string>>> {
  return metadata.range(outbox, { limit });
}

/**
 * Fans out the outbox `entries` inside `tx` (the delivery worker's pass transaction, which also
 * records outcomes and claims: one commit a pass): one delivery per subscriber of every source
 * (due at once, status `pending`), and each event leaves the outbox. Subscribers created after
 * the event do not receive it. Safe on several nodes at once: each entry is re-read in `tx`, so
 * an event is fanned out once.
 * @returns the deliveries made (none for an entry another pass took first).
 */
export async function fanOutIn(tx: MetadataTransaction, sources: readonly SubscriberSource[], entries: ReadonlyArray<Entry<string>>, now: number): Promise<NewDelivery[]> {
  const made: NewDelivery[] = [];
  for (const entry of entries) made.push(...await fanOutOne(tx, sources, entry.key, entry.value, now));
  return made;
}

/** Fans out one outbox entry inside `tx`. @returns the deliveries made (none when it already left the outbox). */
async function fanOutOne(tx: MetadataTransaction, sources: readonly SubscriberSource[], outboxKey: string, eventId: string, now: number): Promise<NewDelivery[]> {
  if (await tx.get(outbox, outboxKey) === undefined) return [];
  tx.remove(outbox, outboxKey);
  const event = await tx.get(events, eventId);
  if (!event) return [];
  const made: NewDelivery[] = [];
  for (const source of sources) {
    for (const s of await source.subscribers(tx, event)) {
      const id = deliveryIdOf(event.id, source.kind, s.id);
      const d: DeliveryRecord = {
        id, eventId: event.id, source: source.kind, subscriberId: s.id, group: s.group, level: s.level, status: 'pending',
        numAttempts: 0, nextAttemptAt: now, lease: null, attempts: [], createdAt: now, updatedAt: now,
      };
      const dueKey = key(timeKey(now), id);
      tx.put(deliveries, id, d);
      tx.put(due, dueKey, s.group);
      tx.put(deliveriesByGroup, key(s.group, timeKey(now), id), id);
      tx.put(deliveriesByEvent, key(event.id, id), id);
      made.push({ dueKey, id, group: s.group });
    }
  }
  return made;
}

/** Events waiting in the outbox (metrics, tests). */
export async function outboxLength(metadata: MetadataStore): Promise<number> {
  return (await metadata.range(outbox)).length;
}

/** The event id part of an outbox or due key (its last part). */
export function lastPart(k: string): string {
  const parts = keyParts(k);
  return parts[parts.length - 1]!;
}
