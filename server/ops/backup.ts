/**
 * Online backup and restore of a data directory.
 *
 * A backup directory holds:
 *   lmdb/data.mdb   a consistent copy of the whole store (LMDB's own copy, `mdb_env_copy2` with
 *                   compaction, through lmdb-js `env.backup`): taken in one read transaction, so
 *                   it is a snapshot even while the server writes
 *   blobs/sha256/…  every blob the snapshot records, in the filesystem blob backend's layout,
 *                   hard-linked from the data directory where the file system allows (blob
 *                   files never change once in place), else copied (`FsBlobBackend.copyTo`)
 *   keys/           the server key and TLS files: the backup holds secrets, keep it safe
 *   backup.json     what was taken (counts, bytes, blobs whose files were already gone)
 * Upload sessions are not backed up: their bytes are not blobs yet; after a restore the
 * server's start-up recovery drops their records and clients start those uploads again.
 */
import { promises as fsp, constants as fsc } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../../engine/store.js';
import { SCHEMA_VERSION, schemaVersion } from '../../engine/migrations.js';
import { scanBlobRecords } from '../../engine/blobs/refs.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import type { Digest } from '../../engine/digest.js';

/** What a backup or restore did; written to `backup.json` for a backup. */
export interface BackupReport {
  format: 1;
  /** ISO time the snapshot was taken. */
  takenAt: string;
  schema: number;
  /** Blob records in the snapshot and their bytes. */
  blobs: number;
  bytes: number;
  /** Blob files hard-linked and copied. */
  linked: number;
  copied: number;
  /** Blobs the snapshot records whose files were already gone (a GC run after the snapshot). */
  missing: Digest[];
}

const MANIFEST = 'backup.json';

async function emptyOrAbsent(dir: string, what: string): Promise<void> {
  const entries = await fsp.readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return [] as string[];
    throw e;
  });
  if (entries.length > 0) throw new Error(`${what} ${dir} is not empty; give a new or empty directory`);
  await fsp.mkdir(dir, { recursive: true });
}

/** Copies every blob `digests` names from `fromDir`'s blob backend into `toDir`'s. */
async function transferBlobs(fromDir: string, toDir: string, digests: Iterable<Digest>, report: BackupReport): Promise<void> {
  const from = new FsBlobBackend(fromDir);
  const to = new FsBlobBackend(toDir);
  for (const d of digests) {
    const done = await from.copyTo(to, d);
    if (done === 'missing') report.missing.push(d);
    else report[done]++;
  }
}

async function copyKeys(fromDir: string, toDir: string): Promise<void> {
  await fsp.cp(join(fromDir, 'keys'), join(toDir, 'keys'), { recursive: true, preserveTimestamps: true, errorOnExist: true }).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
  });
}

/** Blob digests recorded in the store under `dir`, with their total bytes. */
async function recordedBlobs(dir: string): Promise<{ digests: Digest[]; bytes: number; schema: number }> {
  const store = await openStore(dir);
  try {
    const digests: Digest[] = [];
    let bytes = 0;
    for await (const { key, value } of scanBlobRecords(store.metadata)) {
      digests.push(key as Digest);
      bytes += value.size;
    }
    return { digests, bytes, schema: (await schemaVersion(store.metadata)) as number };
  } finally {
    await store.close();
  }
}

/**
 * Refuses `slipway backup` and `slipway restore` in cluster mode: they copy the embedded LMDB
 * environment, and with SLIPWAY_DATABASE_URL the metadata is in PostgreSQL (back it up with
 * PostgreSQL's own tools: pg_dump, or pg_basebackup with WAL archiving; docs/cluster.md).
 * @throws Error saying so when `databaseUrl` is set.
 */
export function refuseInClusterMode(command: 'backup' | 'restore', databaseUrl: string | undefined): void {
  if (databaseUrl === undefined) return;
  throw new Error(`slipway ${command} works on the embedded LMDB store only; SLIPWAY_DATABASE_URL is set, so the metadata is in PostgreSQL: ` +
    'back it up with pg_dump or pg_basebackup, and the blob store with its own tools (docs/cluster.md)');
}

/**
 * Takes a backup of `dataDir` (the server may be running) into `to` (new or empty).
 * @throws Error when `to` is not empty or the store cannot be read.
 */
export async function backup(dataDir: string, to: string): Promise<BackupReport> {
  await emptyOrAbsent(to, 'backup directory');
  const takenAt = new Date().toISOString();
  const source = await openStore(dataDir);
  try {
    await fsp.mkdir(join(to, 'lmdb'), { recursive: true });
    // The one use of the LMDB environment outside the metadata contract: a consistent
    // whole-store copy is a capability of the embedded backend (LMDB's own compacting copy), not
    // of the contract; a networked store is backed up with its database's own tools.
    if (!source.env) throw new Error('backup copies the embedded LMDB store, and this store has none');
    await source.env.backup(join(to, 'lmdb'), true);
  } finally {
    await source.close();
  }
  const snap = await recordedBlobs(to);
  await fsp.rm(join(to, 'lmdb', 'lock.mdb'), { force: true });
  const report: BackupReport = { format: 1, takenAt, schema: snap.schema, blobs: snap.digests.length, bytes: snap.bytes, linked: 0, copied: 0, missing: [] };
  await transferBlobs(dataDir, to, snap.digests, report);
  await copyKeys(dataDir, to);
  await fsp.writeFile(join(to, MANIFEST), JSON.stringify(report, null, 2) + '\n', { mode: 0o600 });
  return report;
}

/**
 * Makes a new data directory `dataDir` (new or empty) from the backup in `from`.
 * @throws Error when `from` is not a Slipway backup, was made by a newer build, or `dataDir` is not empty.
 */
export async function restore(from: string, dataDir: string): Promise<BackupReport> {
  let taken: BackupReport;
  try {
    taken = JSON.parse(await fsp.readFile(join(from, MANIFEST), 'utf8')) as BackupReport;
  } catch {
    throw new Error(`${from} is not a Slipway backup (no readable ${MANIFEST})`);
  }
  if (taken.format !== 1) throw new Error(`${from}: unknown backup format ${String(taken.format)}`);
  if (taken.schema > SCHEMA_VERSION) throw new Error(`${from} holds schema version ${taken.schema}, newer than this build (${SCHEMA_VERSION}); upgrade Slipway`);
  await emptyOrAbsent(dataDir, 'data directory');
  await fsp.mkdir(join(dataDir, 'lmdb'), { recursive: true });
  await fsp.copyFile(join(from, 'lmdb', 'data.mdb'), join(dataDir, 'lmdb', 'data.mdb'), fsc.COPYFILE_EXCL);
  const snap = await recordedBlobs(dataDir);
  const report: BackupReport = { ...taken, linked: 0, copied: 0, missing: [] };
  await transferBlobs(from, dataDir, snap.digests, report);
  await copyKeys(from, dataDir);
  return report;
}
