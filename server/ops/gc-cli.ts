/**
 * The operator's GC commands:
 *   slipway gc [--dry-run] [--json]           one retention + GC run (a dry run says why each blob stays)
 *   slipway gc grace [--json]                 the grace in force, and what each node applies
 *   slipway gc grace set DURATION [--json]    the cluster's grace, applied by every node without a restart
 * On the data directory's LMDB (multi-process) or the cluster's PostgreSQL; safe while nodes serve
 * (engine/registry/gc.ts, engine/registry/gc-grace.ts).
 */
import type { Config } from '../config.js';
import { databaseOf } from '../config.js';
import { openBlobStore } from '../blob-store.js';
import { openStore, type Store } from '../../engine/store.js';
import { systemClock } from '../../engine/clock.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { GarbageCollector, type GcReport, type KeptBlob } from '../../engine/registry/gc.js';
import { graceInForce, graceStatus, setClusterGrace, type GraceInForce } from '../../engine/registry/gc-grace.js';
import { releaseRetention } from '../../engine/platform/retention.js';
import { bytes, duration } from './units.js';

/**
 * `slipway gc`: one run with the grace in force (the cluster setting, else the longest a node
 * announced); prints what it deleted and, on a dry run, why each blob is kept.
 */
export async function collectGarbage(config: Config, dryRun: boolean, json: boolean): Promise<void> {
  const blobs = await openBlobStore(config.blobStore, () => new FsBlobBackend(config.dataDir));
  const store = await openStore(config.dataDir, databaseOf(config));
  let report: GcReport, grace: GraceInForce;
  try {
    const gc = new GarbageCollector(store.metadata, blobs.backend, systemClock, releaseRetention, { graceMs: config.gcGraceSeconds * 1000 });
    grace = await graceInForce(store.metadata, gc.options.graceMs, systemClock.now());
    report = await gc.run({ dryRun, graceMs: grace.graceMs });
  } finally {
    await store.close();
    blobs.close();
  }
  if (json) return console.log(JSON.stringify({ ...report, grace: graceJson(grace) }));
  const verb = dryRun ? 'Would delete' : 'Deleted';
  const images = report.images.unreleased + report.images.expired;
  console.log(`${verb} ${images} image(s) (${report.images.unreleased} never released, ${report.images.expired} expired), ${report.blobs.deleted} blob(s) (${bytes(report.blobs.bytes)}) and ${report.orphans.deleted} orphan file(s) (${bytes(report.orphans.bytes)}) in ${report.durationMs} ms${dryRun ? '; dry run, nothing changed' : ''}.`);
  console.log(`Grace: ${describeGrace(grace)}.`);
  for (const i of report.deletedImages) console.log(`  image  ${i.repository}@${i.digest}  ${i.reason === 'unreleased' ? 'never released' : 'only in old releases'}, pushed ${iso(i.pushedAt)}`);
  for (const b of report.deletedBlobs) console.log(`  blob   ${b.digest}  ${b.size} bytes`);
  for (const o of report.deletedOrphans) console.log(`  orphan ${o.digest}  ${o.size} bytes`);
  if (!dryRun) return;
  console.log(`Kept ${report.keptBlobs.length} blob(s) and ${report.keptOrphans.length} orphan file(s):`);
  for (const b of report.keptBlobs) console.log(`  kept   ${b.digest}  ${b.size} bytes  ${why(b)}`);
  for (const o of report.keptOrphans) console.log(`  kept   ${o.digest}  ${o.size} bytes  no record; ${why(o)}`);
}

/** One line saying why a blob stays. */
function why(b: KeptBlob): string {
  switch (b.reason) {
    case 'referenced': {
      if (b.references === 0) return 'referenced (its record counts references) but no image names it: see `slipway fsck`';
      const more = b.references - b.referencedBy.length;
      return `referenced by ${b.referencedBy.join(', ')}${more > 0 ? ` and ${more} more image(s)` : ''}`;
    }
    case 'grace': return `within the grace: uploaded or last checked ${iso(b.since)}, kept until ${iso(b.until)}`;
    case 'upload': return 'an upload session has reached its size: the bytes may be that upload\'s (kept until it ends)';
  }
}

function describeGrace(g: GraceInForce): string {
  if (g.source === 'nodes') return `${duration(g.graceMs)}, the longest SLIPWAY_GC_GRACE of the nodes heard from in the last day (no cluster setting)`;
  const s = g.setting!;
  if (g.until === undefined) return `${duration(g.graceMs)}, the cluster setting of ${iso(s.setAt)}`;
  return `${duration(g.graceMs)} until ${iso(g.until)}, then the cluster setting of ${iso(s.setAt)}: ${duration(s.graceMs)} (a shorter grace waits until every node applies it)`;
}

function graceJson(g: GraceInForce): Record<string, unknown> {
  return { ms: g.graceMs, source: g.source, ...(g.until === undefined ? {} : { until: g.until }), ...(g.setting ? { setting: g.setting } : {}) };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

async function withStore<T>(config: Config, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(config.dataDir, databaseOf(config));
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** `slipway gc grace`: the grace in force and each node's announcement. */
export async function showGrace(config: Config, json: boolean): Promise<void> {
  const now = systemClock.now();
  const { inForce, nodes } = await withStore(config, (s) => graceStatus(s.metadata, config.gcGraceSeconds * 1000, now));
  if (json) return console.log(JSON.stringify({ grace: graceJson(inForce), nodes }));
  console.log(`GC grace: ${describeGrace(inForce)}.`);
  if (nodes.length === 0) console.log('No node has announced its grace yet (a node does at start).');
  for (const n of nodes) {
    const applies = n.appliedMs === undefined ? 'applies its own (a build without the cluster setting)'
      : `applies ${duration(n.appliedMs)} (${n.settingAt === undefined ? 'its SLIPWAY_GC_GRACE' : `the setting of ${iso(n.settingAt)}`})`;
    console.log(`  ${n.node}  ${applies}; SLIPWAY_GC_GRACE ${duration(n.graceMs)}; last heard from ${iso(n.seenAt)}${n.forgotten ? ' (over a day ago: no longer counts)' : ''}`);
  }
}

/**
 * `slipway gc grace set DURATION`: stores the cluster setting; every node applies it within
 * SETTING_POLL_MS. @returns exit status (2: a bad duration, nothing changed)
 */
export async function setGrace(config: Config, text: string | undefined, json: boolean): Promise<number> {
  const ms = text === undefined ? undefined : parseDuration(text);
  if (ms === undefined) {
    console.error(`slipway: gc grace set needs a duration: seconds (90), or a number with s, m, h or d (90s, 15m, 1h, 2d); got ${text === undefined ? 'nothing' : JSON.stringify(text)}`);
    return 2;
  }
  let setting;
  try {
    setting = await withStore(config, (s) => setClusterGrace(s.metadata, ms, config.gcGraceSeconds * 1000, systemClock.now()));
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    console.error(`slipway: ${e.message}; got ${text}`);
    return 2;
  }
  if (json) console.log(JSON.stringify({ setting }));
  else if (setting.fullFrom === setting.setAt) console.log(`GC grace set to ${duration(setting.graceMs)} (was ${duration(setting.previousMs)}): GC uses it now; every node applies it within 10 s.`);
  else console.log(`GC grace set to ${duration(setting.graceMs)} (was ${duration(setting.previousMs)}): every node applies it within 10 s; GC keeps ${duration(setting.previousMs)} until ${iso(setting.fullFrom)}, so that no node's client loses a blob it was just told exists.`);
  return 0;
}

/**
 * A duration: seconds (`90`, `1.5`), or a number with a unit `s`, `m`, `h` or `d` (`15m`, `1h`).
 * @returns ms, or undefined when `text` is not one
 */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(s|m|h|d)?$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 's') as 's' | 'm' | 'h' | 'd'];
  return Math.round(Number(m[1]) * unit);
}
