/**
 * Retention of the delivery log (docs/webhooks.md "Guarantees and bounds"): events and their
 * deliveries are kept `retentionMs` after the event (default 7 days, SLIPWAY_WEBHOOK_RETENTION,
 * the platform's own window for listing deliveries), then removed together by the delivery
 * worker, a bounded batch per pass. An event is removed only once it has left the outbox and
 * every one of its deliveries has ended (`succeeded`, `failed`, `skipped`): a delivery still
 * being retried keeps its event, so nothing is pruned before it was delivered or given up.
 * Each event goes in a transaction of its own that re-reads everything it removes, so nodes
 * pruning at once on a shared PostgreSQL remove each event once, and a change racing the
 * pruning (a claim) either commits before it (the delivery is then not finished: kept) or
 * conflicts and is retried. The webhooks of a destroyed app (kept, marked removed, to deliver
 * the events recorded up to the destruction) go with its `api:app` destroy event.
 */
import { key, type MetadataStore, type MetadataTransaction } from '../storage/metadata.js';
import type { DeliveryStatus } from './records.js';
import { appWebhooks, deliveries, deliveriesByEvent, deliveriesByGroup, due, events, eventsByApp, eventsByTime, outbox } from './keyspaces.js';
import { timeKey } from './outbox.js';

/** Default time events and deliveries are kept after the event (ms): 7 days. */
export const DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000;

/** Events looked at per `pruneExpired` call: bounds one pass's work whatever the backlog. */
export const PRUNE_BATCH = 100;

const FINISHED: ReadonlySet<DeliveryStatus> = new Set(['succeeded', 'failed', 'skipped']);

/**
 * Removes up to `limit` events recorded before `now - retentionMs`, oldest first, with their
 * deliveries and index entries, skipping those still in the outbox or with an unfinished delivery.
 * @param now ms since the epoch (engine clock)
 * @returns how many events were looked at (`limit` when more may be waiting) and removed.
 */
export async function pruneExpired(metadata: MetadataStore, now: number, retentionMs: number, limit = PRUNE_BATCH): Promise<{ scanned: number; pruned: number }> {
  const cutoff = now - retentionMs;
  const expired = await metadata.range(eventsByTime, { end: key(timeKey(cutoff)), limit });
  let pruned = 0;
  for (const entry of expired) {
    const eventId = entry.value;
    const removed = await metadata.transact(async (tx) => {
      if (await tx.get(eventsByTime, entry.key) === undefined) return false;
      const event = await tx.get(events, eventId);
      if (event && await tx.get(outbox, key(timeKey(event.createdAt), eventId)) !== undefined) return false;
      const links = await tx.range(deliveriesByEvent, { prefix: eventId });
      const ds = await tx.getMany(links.map((l) => [deliveries, l.value] as const));
      if (ds.some((d) => d !== undefined && !FINISHED.has(d.status))) return false;
      for (const [i, d] of ds.entries()) {
        tx.remove(deliveriesByEvent, links[i]!.key);
        if (!d) continue;
        tx.remove(deliveries, d.id);
        tx.remove(deliveriesByGroup, key(d.group, timeKey(d.createdAt), d.id));
        if (d.nextAttemptAt !== null) tx.remove(due, key(timeKey(d.nextAttemptAt), d.id));
      }
      if (event?.appId) tx.remove(eventsByApp, key(event.appId, timeKey(event.createdAt), eventId));
      if (event?.appId && event.entity === 'api:app' && event.action === 'destroy') await pruneRemovedWebhooks(tx, event.appId);
      tx.remove(events, eventId);
      tx.remove(eventsByTime, entry.key);
      return true;
    });
    if (removed) pruned++;
  }
  return { scanned: expired.length, pruned };
}


/** Removes the webhooks of destroyed app `appId` (marked `removedAt` by its destruction). */
async function pruneRemovedWebhooks(tx: MetadataTransaction, appId: string): Promise<void> {
  for (const e of await tx.range(appWebhooks, { prefix: appId })) {
    if (e.value.removedAt !== undefined) tx.remove(appWebhooks, e.key);
  }
}
