/**
 * An engine without HTTP for tests: store, ManualClock, GC-safe blob store, upload sessions,
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
import { GarbageCollector, GcSafeBlobStore } from '../../engine/registry/gc.js';
import { releaseRetention } from '../../engine/platform/retention.js';
import type { Digest } from '../../engine/digest.js';

/** sha256 digest of `b`. */
export const digestOf = (b: Buffer) => ('sha256:' + createHash('sha256').update(b).digest('hex')) as Digest;

export async function engineFixture(t: { teardown(fn: () => unknown): void }, uploadOptions?: UploadOptions) {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  const clock = new ManualClock();
  const blobs = new GcSafeBlobStore(tmp.dir, store);
  const uploads = new Uploads(store, blobs, clock, async () => { throw new Error('no rehash in tests'); }, tmp.dir, uploadOptions);
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
  return { tmp, store, clock, blobs, uploads, registry, gc, upload };
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
