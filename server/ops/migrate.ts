/**
 * `slipway migrate --to-database URL [--to-blob-store s3]`: copies an embedded data directory
 * (LMDB metadata, filesystem blobs) into the cluster stores: every record into a PostgreSQL
 * metadata store (engine/storage/postgres-metadata.ts) and, when asked, every blob into an S3
 * blob store (server/ops/migrate-blobs.ts). docs/cluster-migration.md is the operator's guide.
 *
 * - **Offline.** The data directory must not be in use: the copy refuses to start while another
 *   process (a `slipway serve`, `gc` or `fsck`) has the LMDB environment open and has read from
 *   it (LMDB's reader table, engine/storage/lmdb-metadata.ts `otherProcesses`). The server takes
 *   no lock of its own; the reader table is what every process that reads the store leaves.
 * - **Order.** Blob bytes first, then the records that name them, so the target never holds a
 *   record without its bytes; the `meta` keyspace last and its `schema` stamp last of all, so a
 *   target without the stamp is visibly incomplete.
 * - **Idempotent, resumable.** A record equal to the source's in the target is not written
 *   again, nor a blob the target has; a re-run copies nothing and says so, an interrupted run
 *   copies what is left. A record that differs is overwritten with the source's.
 * - **Verified.** After copying, every keyspace is walked on both sides in key order: the counts
 *   must be equal and every record equal (as data: field order aside); every blob must be in the
 *   target with its recorded size; copied blobs were hashed on the way (migrate-blobs.ts). A
 *   target record the source does not have is a problem (the target must hold only this data).
 * - **Not copied:** upload sessions in progress (node-local: their bytes live beside the node's
 *   blob backend; clients restart those uploads) and blob files no record names (GC's orphans).
 */
import { scanKeyspace } from '../../engine/storage/scan.js';
import { compareUtf8, storedKeyspace, type Entry, type Keyspace, type MetadataReader, type MetadataStore } from '../../engine/storage/metadata.js';
import type { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import type { BlobBackend } from '../../engine/blobs/contract.js';
import { UPLOAD_SESSIONS_KEYSPACE } from '../../engine/blobs/refs.js';
import { schemaVersion } from '../../engine/migrations.js';
import { checkCopiedBlobs, copyBlobs, type BlobCopyReport } from './migrate-blobs.js';

/** The metadata store's own keyspace (engine/storage/meta-keyspace.ts), copied last. */
const META = 'meta';
/** Its key holding the schema version, written last of all. */
const SCHEMA_KEY = 'schema';
/** Records compared per read, and the most written per transaction. */
const PAGE = 1000;
/** Most bytes of JSON written per transaction. */
const BATCH_BYTES = 4 * 1024 * 1024;

/** Per keyspace: records in the source, written by this run, already equal in the target. */
export interface KeyspaceCopy {
  source: number;
  copied: number;
  unchanged: number;
}

/** What `migrate` did and found. */
export interface MigrateReport {
  schema: number;
  keyspaces: Record<string, KeyspaceCopy>;
  records: { copied: number; unchanged: number };
  /** Null when the blobs stay in the data directory. */
  blobs: BlobCopyReport | null;
  /** Keyspaces not copied, with their record counts (node-local state). */
  skipped: Record<string, number>;
  verified: { keyspaces: number; records: number; blobs: number };
  /** Verification failures (empty: the target equals the source). */
  problems: string[];
}

/** The stores of one migration. */
export interface MigrateStores {
  /** The data directory's store, opened (and migrated to the current schema) by the caller. */
  source: LmdbMetadataStore;
  target: MetadataStore & { keyspaceNames(): Promise<string[]> };
  /** Blob copy: the data directory's blobs and the target backend; absent to leave blobs in place. */
  blobs?: { source: BlobBackend; target: BlobBackend };
  /** Progress lines for a human (not called with --json). */
  say?: (line: string) => void;
}

/**
 * Copies and verifies (see the top of this file).
 * @throws Error when another process uses the data directory, when the target holds another
 *         schema version, or when a blob cannot be copied (naming it); nothing already copied is
 *         undone and a re-run resumes.
 */
export async function migrate({ source, target, blobs, say = () => undefined }: MigrateStores): Promise<MigrateReport> {
  const others = source.otherProcesses();
  if (others.length > 0) {
    throw new Error(`the data directory is in use by process ${others.join(', ')} (a running slipway serve, gc or fsck): stop it, then run migrate again`);
  }
  const schema = await schemaVersion(source);
  if (schema === undefined) throw new Error('the data directory holds no store');
  const targetSchema = await schemaVersion(target);
  if (targetSchema !== undefined && targetSchema !== schema) {
    throw new Error(`the target database holds schema version ${targetSchema}, the data directory ${schema}: it belongs to another build or another installation`);
  }
  const report: MigrateReport = { schema, keyspaces: {}, records: { copied: 0, unchanged: 0 }, blobs: null, skipped: {}, verified: { keyspaces: 0, records: 0, blobs: 0 }, problems: [] };

  if (blobs) {
    say('Copying blobs…');
    let n = 0;
    report.blobs = await copyBlobs(source, blobs.source, blobs.target, () => { if (++n % 100 === 0) say(`  ${n} blob(s) copied`); });
  }

  const names = source.keyspaceNames().filter((n) => n !== META).concat(source.keyspaceNames().includes(META) ? [META] : []);
  for (const name of names) {
    const ks = storedKeyspace(name);
    if (name === UPLOAD_SESSIONS_KEYSPACE) {
      report.skipped[name] = await count(source, ks);
      continue;
    }
    report.keyspaces[name] = await copyKeyspace(source, target, ks);
    report.records.copied += report.keyspaces[name]!.copied;
    report.records.unchanged += report.keyspaces[name]!.unchanged;
    if (report.keyspaces[name]!.copied > 0) say(`  ${name}: ${report.keyspaces[name]!.copied} record(s) copied`);
  }

  say('Verifying…');
  for (const name of new Set([...names, ...await target.keyspaceNames()])) {
    if (name === UPLOAD_SESSIONS_KEYSPACE) continue;
    const v = await compareKeyspace(source, target, storedKeyspace(name), report.problems);
    report.verified.keyspaces++;
    report.verified.records += v;
  }
  if (blobs) {
    const b = await checkCopiedBlobs(source, blobs.target);
    report.verified.blobs = b.checked;
    report.problems.push(...b.problems);
  }
  return report;
}

/** Copies one keyspace page by page; the `schema` key of `meta` goes in its own last write. */
async function copyKeyspace(source: MetadataReader, target: MetadataStore, ks: Keyspace<unknown>): Promise<KeyspaceCopy> {
  const out: KeyspaceCopy = { source: 0, copied: 0, unchanged: 0 };
  let deferred: Entry<unknown> | undefined;
  let start: string | undefined;
  for (;;) {
    const page = await source.range(ks, { ...(start === undefined ? {} : { start }), limit: PAGE + 1 });
    const items = page.slice(0, PAGE);
    const next = page[PAGE]?.key;
    if (items.length === 0) break;
    const there = new Map((await target.range(ks, { start: items[0]!.key, ...(next === undefined ? {} : { end: next }) })).map((e) => [e.key, e.value]));
    const writes: Array<Entry<unknown>> = [];
    for (const e of items) {
      out.source++;
      if (there.has(e.key) && sameValue(there.get(e.key), e.value)) { out.unchanged++; continue; }
      if (ks.name === META && e.key === SCHEMA_KEY) { deferred = e; continue; }
      writes.push(e);
    }
    await write(target, ks, writes);
    out.copied += writes.length;
    if (next === undefined) break;
    start = next;
  }
  if (deferred) {
    await write(target, ks, [deferred]);
    out.copied++;
  }
  return out;
}

/** Writes `entries` in transactions of at most PAGE records and about BATCH_BYTES of JSON. */
async function write(target: MetadataStore, ks: Keyspace<unknown>, entries: Array<Entry<unknown>>): Promise<void> {
  let batch: Array<Entry<unknown>> = [];
  let bytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const these = batch;
    await target.transact((tx) => { for (const e of these) tx.put(ks, e.key, e.value); });
    batch = [];
    bytes = 0;
  };
  for (const e of entries) {
    const size = JSON.stringify(e.value).length;
    if (batch.length > 0 && (batch.length >= PAGE || bytes + size > BATCH_BYTES)) await flush();
    batch.push(e);
    bytes += size;
  }
  await flush();
}

/**
 * Walks `ks` on both sides in key order (both backends order keys by UTF-8 bytes) and records
 * every difference in `problems` (at most 20 per keyspace). @returns records compared.
 */
async function compareKeyspace(source: MetadataReader, target: MetadataReader, ks: Keyspace<unknown>, problems: string[]): Promise<number> {
  const a = scanKeyspace(source, ks)[Symbol.asyncIterator]();
  const b = scanKeyspace(target, ks)[Symbol.asyncIterator]();
  let x = await a.next(), y = await b.next();
  let compared = 0, found = 0, sourceCount = 0, targetCount = 0;
  const problem = (p: string) => { if (found++ < 20) problems.push(`${ks.name}: ${p}`); };
  while (!x.done || !y.done) {
    if (!x.done && (y.done || compareUtf8(x.value.key, y.value.key) < 0)) {
      problem(`${JSON.stringify(x.value.key)} is missing from the target`);
      sourceCount++;
      x = await a.next();
    } else if (!y.done && (x.done || compareUtf8(y.value.key, x.value.key) < 0)) {
      problem(`${JSON.stringify(y.value.key)} is in the target but not in the data directory`);
      targetCount++;
      y = await b.next();
    } else {
      if (!sameValue(x.value!.value, y.value!.value)) problem(`${JSON.stringify(x.value!.key)} differs`);
      compared++; sourceCount++; targetCount++;
      x = await a.next();
      y = await b.next();
    }
  }
  if (sourceCount !== targetCount) problems.push(`${ks.name}: ${sourceCount} record(s) in the data directory, ${targetCount} in the target`);
  return compared;
}

async function count(reader: MetadataReader, ks: Keyspace<unknown>): Promise<number> {
  let n = 0;
  for await (const _ of scanKeyspace(reader, ks)) n++;
  return n;
}

/** True when two values are the same data: field order and `undefined` fields aside. */
export function sameValue(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (x === null || typeof x !== 'object' || Array.isArray(x)) return x;
    const o = x as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
  });
}
