/**
 * The GC grace period of a cluster: an operator setting changed at run time, or else the longest
 * grace any node was started with.
 *
 * The grace period is what keeps a blob that was just uploaded, mounted or checked alive until a
 * manifest references it (engine/registry/gc.ts). GC runs on one node at a time (an exclusive
 * lock), but pushes arrive on every node, and each node also refreshes a blob's `touchedAt` at
 * most every `touchEveryMs(grace)` (a quarter of the grace, at most five minutes), from the grace
 * *it* applies. Two sources, in this order:
 *
 * 1. **The cluster setting** (keyspace `gc-settings`, key `grace`), written by `slipway gc grace
 *    set`. Every node reads it at start and every `SETTING_POLL_MS` after, and applies it (its
 *    touch interval follows) without a restart; SLIPWAY_GC_GRACE is then ignored. GC uses it at
 *    once when it is longer than the grace GC used before. A shorter one waits `fullFrom`: until
 *    every node has read it (two polls) and every touch recorded under the old, longer interval is
 *    older than that interval; until then GC keeps the previous grace. Without that wait a client
 *    that checked a blob just before the change, on a node that had not recorded the check (its
 *    old interval not elapsed), could see the blob go at once.
 * 2. **No setting: the nodes' own graces.** Every node announces its SLIPWAY_GC_GRACE in the
 *    keyspace `gc-grace` (node name → GraceRecord) when it starts and at least every
 *    `ANNOUNCE_EVERY_MS` after, and a GC run uses the **longest** grace announced by a node seen
 *    within `NODE_FORGOTTEN_MS`, never less than its own. A misconfigured node can therefore only
 *    make GC keep blobs longer, never delete sooner; a node that stopped is forgotten a day after
 *    it was last seen.
 *
 * A node's announcement also carries the grace it applies and the setting it read, so `slipway gc
 * grace` shows which node runs with what. On the embedded store there is one node and the same
 * rules hold (the CLI writes the setting through the shared LMDB environment).
 */
import type { MetadataReader, MetadataStore } from '../storage/metadata.js';
import { gcGrace, gcSettings } from './keyspaces.js';
import type { GraceRecord, GraceSetting } from './records.js';

export type { GraceRecord, GraceSetting };

/** A node re-announces at least this often (ms), so a running node is never forgotten. */
export const ANNOUNCE_EVERY_MS = 60 * 60_000;
/** A node not heard from for this long (ms) no longer counts. */
export const NODE_FORGOTTEN_MS = 24 * 60 * 60_000;
/** Every node reads the cluster setting this often (ms). */
export const SETTING_POLL_MS = 10_000;
/** Longest interval between two recorded touches of one unreferenced blob (ms). */
export const MAX_TOUCH_EVERY_MS = 5 * 60_000;
/** Longest grace an operator may set (ms): 30 days, the retention of images in old releases. */
export const MAX_GRACE_MS = 30 * 24 * 60 * 60_000;

const SETTING_KEY = 'grace';

/**
 * How often a node applying `graceMs` records a client's interest in an unreferenced blob (ms):
 * a quarter of the grace, at most `MAX_TOUCH_EVERY_MS`, so a client that checked a blob has at
 * least three quarters of the grace to reference it.
 */
export function touchEveryMs(graceMs: number): number {
  return Math.min(MAX_TOUCH_EVERY_MS, graceMs / 4);
}

/** The cluster setting, or undefined when no operator set one (one read). */
export async function readGraceSetting(reader: MetadataReader): Promise<GraceSetting | undefined> {
  return reader.get(gcSettings, SETTING_KEY);
}

/** The grace a node applies: the setting's when there is one, else its own (ms). */
export function appliedGraceMs(setting: GraceSetting | undefined, ownGraceMs: number): number {
  return setting?.graceMs ?? ownGraceMs;
}

/**
 * Announces node `node`'s grace (one transaction), unless the same values were announced less
 * than `ANNOUNCE_EVERY_MS` ago (one read). Call at start and on every poll.
 * @param ownGraceMs the node's SLIPWAY_GC_GRACE, ms
 * @param setting the cluster setting the node applies (undefined: none)
 * @param now ms since epoch
 * @throws what the store throws (StoreUnavailableError)
 */
export async function announceGrace(metadata: MetadataStore, node: string, ownGraceMs: number, setting: GraceSetting | undefined, now: number): Promise<void> {
  const next: GraceRecord = { graceMs: ownGraceMs, seenAt: now, appliedMs: appliedGraceMs(setting, ownGraceMs), ...(setting ? { settingAt: setting.setAt } : {}) };
  const rec = await metadata.get(gcGrace, node);
  if (rec && rec.graceMs === next.graceMs && rec.appliedMs === next.appliedMs && rec.settingAt === next.settingAt
    && now - rec.seenAt < ANNOUNCE_EVERY_MS && now >= rec.seenAt) return;
  await metadata.transact((tx) => tx.put(gcGrace, node, next));
}

/**
 * Without a setting: the longest of `ownGraceMs` and every grace announced by a node seen within
 * `NODE_FORGOTTEN_MS` of `now`.
 * @returns ms
 */
export async function clusterGraceMs(reader: MetadataReader, ownGraceMs: number, now: number): Promise<number> {
  let grace = ownGraceMs;
  for (const { value } of await reader.range(gcGrace)) {
    if (now - value.seenAt <= NODE_FORGOTTEN_MS && value.graceMs > grace) grace = value.graceMs;
  }
  return grace;
}

/** The grace a GC run uses now, and where it comes from. */
export interface GraceInForce {
  /** ms */
  graceMs: number;
  /** `setting`: the operator's cluster setting; `nodes`: the longest grace the nodes announced. */
  source: 'setting' | 'nodes';
  /** The setting, when there is one. */
  setting?: GraceSetting;
  /** While a shorter setting waits for the nodes (ms since epoch): when it applies in full. */
  until?: number;
}

/**
 * The grace a GC run must use at `now` (module comment): the setting (the previous grace while
 * a shorter setting waits for `fullFrom`), else the longest announced grace, never less than
 * `ownGraceMs`.
 * @param ownGraceMs the caller's SLIPWAY_GC_GRACE, ms (ignored when a setting exists)
 */
export async function graceInForce(reader: MetadataReader, ownGraceMs: number, now: number): Promise<GraceInForce> {
  const setting = await readGraceSetting(reader);
  if (!setting) return { graceMs: await clusterGraceMs(reader, ownGraceMs, now), source: 'nodes' };
  if (now >= setting.fullFrom) return { graceMs: setting.graceMs, source: 'setting', setting };
  return { graceMs: Math.max(setting.graceMs, setting.previousMs), source: 'setting', setting, until: setting.fullFrom };
}

/**
 * Sets the cluster's grace (one serializable transaction): GC uses it at once when it is at least
 * the grace in force now; a shorter one from `now + 2 × SETTING_POLL_MS + touchEveryMs(previous)`
 * (every node has read it, and every touch recorded under the previous interval is that old).
 * @param graceMs 0 ≤ graceMs ≤ MAX_GRACE_MS
 * @param ownGraceMs the caller's SLIPWAY_GC_GRACE (the previous grace when no setting exists and no node announced)
 * @returns the setting stored
 * @throws RangeError when `graceMs` is out of range (nothing is written); what the store throws
 */
export async function setClusterGrace(metadata: MetadataStore, graceMs: number, ownGraceMs: number, now: number): Promise<GraceSetting> {
  if (!Number.isFinite(graceMs) || graceMs < 0 || graceMs > MAX_GRACE_MS) {
    throw new RangeError(`a GC grace must be between 0 and ${MAX_GRACE_MS / 86_400_000} days`);
  }
  return metadata.transact(async (tx) => {
    const previousMs = (await graceInForce(tx, ownGraceMs, now)).graceMs;
    const fullFrom = graceMs >= previousMs ? now : now + 2 * SETTING_POLL_MS + touchEveryMs(previousMs);
    const setting: GraceSetting = { graceMs, setAt: now, previousMs, fullFrom };
    tx.put(gcSettings, SETTING_KEY, setting);
    return setting;
  });
}

/** One node's announcement, for `slipway gc grace`. */
export interface NodeGrace extends GraceRecord {
  node: string;
  /** Not heard from within NODE_FORGOTTEN_MS: no longer counts. */
  forgotten: boolean;
}

/** The grace in force and every node's announcement (two reads; `slipway gc grace`). */
export async function graceStatus(reader: MetadataReader, ownGraceMs: number, now: number): Promise<{ inForce: GraceInForce; nodes: NodeGrace[] }> {
  const inForce = await graceInForce(reader, ownGraceMs, now);
  const nodes = (await reader.range(gcGrace)).map(({ key, value }) => ({ node: key, ...value, forgotten: now - value.seenAt > NODE_FORGOTTEN_MS }));
  return { inForce, nodes };
}

/**
 * A node's part (server/main.ts): returns the function to call at start and every
 * `SETTING_POLL_MS`. Each call reads the setting, calls `apply(graceMs, setting)` when the grace
 * the node applies changed (the first call always), and announces (announceGrace).
 * @param ownGraceMs the node's SLIPWAY_GC_GRACE, ms
 * @param now the clock, ms since epoch
 * @throws (from the returned function) what the store throws
 */
export function followGrace(metadata: MetadataStore, node: string, ownGraceMs: number, now: () => number,
  apply: (graceMs: number, setting: GraceSetting | undefined) => void): () => Promise<void> {
  let applied: number | undefined;
  return async () => {
    const setting = await readGraceSetting(metadata);
    const graceMs = appliedGraceMs(setting, ownGraceMs);
    if (graceMs !== applied) {
      applied = graceMs;
      apply(graceMs, setting);
    }
    await announceGrace(metadata, node, ownGraceMs, setting, now());
  };
}
