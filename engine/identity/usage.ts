/**
 * When each authorization was last used to authenticate (the dashboard's "last used" column).
 * Writing on every request would put a commit on every API and registry call, so a use is
 * recorded at most once per `USE_RESOLUTION_MS` per authorization per process: a Map look-up on
 * the hot path, and a one-put transaction that nobody awaits (off the request's critical path)
 * once a minute per authorization in use. "Last used" is therefore exact to the minute; a crash
 * loses at most the last minute of it, which changes nothing else.
 */
import type { MetadataStore } from '../storage/metadata.js';
import { authorizationUse } from './keyspaces.js';

/** Resolution of "last used", ms. */
export const USE_RESOLUTION_MS = 60_000;

/** Most authorizations remembered per process before the memory is dropped (bounded memory). */
const REMEMBERED = 100_000;

const seen = new WeakMap<MetadataStore, Map<string, number>>();

/**
 * Notes that authorization `id` authenticated a request at `now` (ms since epoch).
 * Never throws; a failed write is ignored (the value is informational).
 */
export function recordUse(store: MetadataStore, id: string, now: number): void {
  let m = seen.get(store);
  if (!m) seen.set(store, (m = new Map()));
  const last = m.get(id);
  if (last !== undefined && now - last < USE_RESOLUTION_MS && now >= last) return;
  if (m.size >= REMEMBERED) m.clear();
  m.set(id, now);
  store.transact((tx) => tx.put(authorizationUse, id, now)).catch(() => undefined);
}

/**
 * When authorization `id` was last used (ms since epoch, to the minute), or null when never
 * recorded. This process's own record wins over the stored one, whose write may be in flight.
 */
export async function lastUsed(store: MetadataStore, id: string): Promise<number | null> {
  return seen.get(store)?.get(id) ?? (await store.get(authorizationUse, id)) ?? null;
}
