/**
 * One GC grace period across the nodes of a cluster.
 *
 * The grace period (`SLIPWAY_GC_GRACE`) is what keeps a blob that was just uploaded, mounted or
 * checked alive until a manifest references it (engine/registry/gc.ts). GC runs on one node at a
 * time (an exclusive lock), but pushes arrive on every node, and each node also refreshes a
 * blob's `touchedAt` at an interval derived from *its own* grace (a quarter of it, at most five
 * minutes). If the node that happens to hold the GC lock had a shorter grace than another node,
 * GC could delete a blob that node's client is about to reference.
 *
 * So every node announces its grace in the keyspace `gc-grace` (node name → `{ graceMs, seenAt }`)
 * when it starts and at least every `ANNOUNCE_EVERY_MS` after, and every GC run uses the
 * **longest** grace announced by a node seen within `NODE_FORGOTTEN_MS`, never less than its own.
 * A misconfigured node can therefore only make GC keep blobs longer, never delete sooner; a
 * node that stopped is forgotten a day after it was last seen (its open upload sessions are lost
 * with it anyway). On the embedded store there is one node and this changes nothing.
 */
import type { MetadataReader, MetadataStore } from '../storage/metadata.js';
import { gcGrace } from './keyspaces.js';

/** A node re-announces at least this often (ms), so a running node is never forgotten. */
export const ANNOUNCE_EVERY_MS = 60 * 60_000;
/** A node not heard from for this long (ms) no longer counts. */
export const NODE_FORGOTTEN_MS = 24 * 60 * 60_000;

/**
 * Announces node `node`'s grace (one transaction), unless the same value was announced less than
 * `ANNOUNCE_EVERY_MS` ago (one read). Call at start and on every GC tick.
 * @param graceMs ms; @param now ms since epoch
 * @throws what the store throws (StoreUnavailableError)
 */
export async function announceGrace(metadata: MetadataStore, node: string, graceMs: number, now: number): Promise<void> {
  const rec = await metadata.get(gcGrace, node);
  if (rec && rec.graceMs === graceMs && now - rec.seenAt < ANNOUNCE_EVERY_MS && now >= rec.seenAt) return;
  await metadata.transact((tx) => tx.put(gcGrace, node, { graceMs, seenAt: now }));
}

/**
 * The grace a GC run must respect: the longest of `ownGraceMs` and every grace announced by a node
 * seen within `NODE_FORGOTTEN_MS` of `now`.
 * @returns ms
 */
export async function clusterGraceMs(reader: MetadataReader, ownGraceMs: number, now: number): Promise<number> {
  let grace = ownGraceMs;
  for (const { value } of await reader.range(gcGrace)) {
    if (now - value.seenAt <= NODE_FORGOTTEN_MS && value.graceMs > grace) grace = value.graceMs;
  }
  return grace;
}
