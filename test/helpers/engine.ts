/**
 * An engine without HTTP for tests: store, ManualClock, GC-safe blob store, upload sessions,
 * registry (image inspection stubbed as an amd64 image) and garbage collector on a temp dir,
 * closed and removed at teardown.
 */
import { createHash } from 'node:crypto';
import { tempDir } from './server.js';
import { ManualClock } from '../../engine/clock.js';
import { openStore } from '../../engine/store.js';
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
