/**
 * An engine without HTTP for tests: store, ManualClock, filesystem blob backend, upload sessions,
 * registry (image inspection stubbed as an amd64 image) and garbage collector on a temp dir,
 * closed and removed at teardown.
 */
import { createHash } from 'node:crypto';
import { tempDir } from './server.js';
import { ManualClock } from '../../engine/clock.js';
import { openStore, type Store } from '../../engine/store.js';
import type { Keyspace } from '../../engine/storage/metadata.js';
import type { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import { Uploads, type UploadOptions } from '../../engine/blobs/uploads.js';
import { Registry } from '../../engine/registry/registry.js';
import { GarbageCollector } from '../../engine/registry/gc.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { blobKey } from '../../engine/blobs/contract.js';
import { join } from 'node:path';
import { releaseRetention } from '../../engine/platform/retention.js';
import type { Digest } from '../../engine/digest.js';

/** sha256 digest of `b`. */
export const digestOf = (b: Buffer) => ('sha256:' + createHash('sha256').update(b).digest('hex')) as Digest;

/** Where the filesystem backend keeps the committed blob `digest` under `dataDir` (fs-backend.ts layout). */
export const blobFile = (dataDir: string, digest: Digest) => join(dataDir, blobKey(digest));

/** Where the filesystem backend keeps the bytes of upload session `id` under `dataDir`. */
export const sessionFile = (dataDir: string, id: string) => join(dataDir, 'uploads', id);

export async function engineFixture(t: { teardown(fn: () => unknown): void }, uploadOptions?: UploadOptions) {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  const clock = new ManualClock();
  const blobs = new FsBlobBackend(tmp.dir);
  const uploads = new Uploads(store, blobs, clock, uploadOptions);
  await uploads.init();
  const registry = new Registry(store.metadata, blobs, clock, async () => ({
    config: { architecture: 'amd64', os: 'linux', entrypoint: null, cmd: ['/bin/sh'], workingDir: '/', env: [], user: '', ignoredInstructions: [] },
    scans: {},
  }));
  const gc = new GarbageCollector(store.metadata, blobs, clock, releaseRetention);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  /** Uploads `bytes` to `repository` through a session; returns the digest. */
  async function upload(repository: string, bytes: Buffer): Promise<Digest> {
    let rec = await uploads.create(repository, 'acct');
    const w = uploads.beginAppend(rec, undefined);
    w.write(bytes);
    rec = await uploads.finishAppend(rec, w, true);
    await uploads.commit(rec, digestOf(bytes));
    return digestOf(bytes);
  }
  return { tmp, store, clock, blobs, uploads, registry, gc, upload, blobPath: (d: Digest) => blobFile(tmp.dir, d) };
}

/**
 * Counts the LMDB range reads of keyspace `ks` (in and outside transactions) that `accept`
 * selects while `fn` runs; lets tests check that an operation reads no whole table.
 * @param accept given lmdb-js's getRange options; default: every read.
 */
export async function countRangeReads(store: Store, ks: Keyspace<unknown>, fn: () => Promise<unknown>,
  accept: (o: { start?: unknown } | undefined) => boolean = () => true): Promise<number> {
  const h = (store.metadata as LmdbMetadataStore).handles(ks);
  let n = 0;
  const dbs = [h.db, h.raw] as unknown as Array<Record<string, unknown>>;
  const originals = dbs.map((db) => db.getRange as (this: unknown, o?: { start?: unknown }) => unknown);
  dbs.forEach((db, i) => {
    db.getRange = function (this: unknown, o?: { start?: unknown }) {
      if (accept(o)) n++;
      return originals[i]!.call(this, o);
    };
  });
  try {
    await fn();
  } finally {
    dbs.forEach((db, i) => { db.getRange = originals[i]; });
  }
  return n;
}
