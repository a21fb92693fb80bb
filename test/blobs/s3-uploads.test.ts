/**
 * The upload engine (engine/blobs/uploads.ts) over the S3 backend on a real Ceph RADOS Gateway:
 * chunked appends through the upload writer and the hash thread into multipart parts, commit,
 * dedupe only onto recorded bytes (an unrecorded copy is replaced, with a new version), a digest
 * mismatch storing nothing, a restart dropping open sessions (S3 cannot resume them) and
 * aborting their multipart uploads, and part buffers counted in the upload memory budget.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { S3Client, CreateBucketCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { S3BlobBackend, s3ClientConfig, MIN_PART_SIZE } from '../../engine/blobs/s3-backend.js';
import { Uploads } from '../../engine/blobs/uploads.js';
import { UploadMemory } from '../../engine/blobs/upload-memory.js';
import { PART_HEADROOM } from '../../engine/blobs/s3-budget.js';
import { openStore } from '../../engine/store.js';
import { ManualClock } from '../../engine/clock.js';
import { HashThread } from '../../workers/hash-thread.js';
import * as blobKs from '../../engine/blobs/keyspaces.js';
import type { Digest } from '../../engine/digest.js';
import type { UploadRecord } from '../../engine/blobs/records.js';
import { tempDir } from '../helpers/server.js';
import { startCephRgw, cephSkip } from '../helpers/ceph-rgw.js';
import { waitFor } from '../helpers/daemons.js';

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}` as Digest;

t.test('upload sessions on S3 (Ceph RGW)', { skip: cephSkip() }, async (t) => {
  const rgw = await startCephRgw();
  t.teardown(() => rgw.stop());
  const client = new S3Client(s3ClientConfig({ endpoint: rgw.endpoint, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } }));
  t.teardown(() => client.destroy());
  const Bucket = 'slipway-uploads';
  await client.send(new CreateBucketCommand({ Bucket }));
  const thread = new HashThread();
  t.teardown(() => thread.close());
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  const clock = new ManualClock();
  // putLimit at the part size: sessions past one part are multipart uploads (the restart test
  // needs one); the memory test also runs with the default (sessions kept whole up to 2 parts).
  const backend = (putLimit = MIN_PART_SIZE) => new S3BlobBackend({ client, bucket: Bucket, partSize: MIN_PART_SIZE, uploadConcurrency: 2, putLimit, newHash: thread.create });
  const blobs = backend();
  const uploads = new Uploads(store, blobs, clock, { staleAfterMs: 60_000 });
  await uploads.init();

  /** Appends `bytes` to `rec` in PATCH-sized pieces; returns the updated record. */
  async function patch(rec: UploadRecord, bytes: Buffer, pieces: number): Promise<UploadRecord> {
    const step = Math.ceil(bytes.length / pieces);
    for (let at = 0; at < bytes.length; at += step) {
      const w = uploads.beginAppend(rec, rec.offset);
      if (!w.write(bytes.subarray(at, at + step))) await new Promise<void>((resolve) => w.onDrain(resolve));
      rec = await uploads.finishAppend(rec, w, true);
    }
    return rec;
  }

  t.test('chunked upload, commit, dedupe by record', async (t) => {
    const bytes = randomBytes(2 * MIN_PART_SIZE + 12_345);
    const rec = await patch(await uploads.create('s3/web', 'acct'), bytes, 3);
    t.equal(rec.offset, bytes.length);
    t.same(await uploads.commit(rec, sha(bytes)), { digest: sha(bytes), size: bytes.length });
    t.equal((await store.metadata.get(blobKs.blobs, sha(bytes)))?.size, bytes.length, 'recorded');
    const first = await blobs.stat(sha(bytes));
    t.equal(first?.size, bytes.length, 'stored');
    const again = await patch(await uploads.create('s3/worker', 'acct'), bytes, 2);
    await uploads.commit(again, sha(bytes));
    t.equal((await blobs.stat(sha(bytes)))?.version, first?.version, 'a recorded copy is reused');
    await store.metadata.transact((tx) => tx.remove(blobKs.blobs, sha(bytes)));
    const third = await patch(await uploads.create('s3/worker', 'acct'), bytes, 1);
    await uploads.commit(third, sha(bytes));
    t.not((await blobs.stat(sha(bytes)))?.version, first?.version, 'an unrecorded copy is replaced by the verified upload');
  });

  t.test('a digest mismatch stores nothing and ends the session', async (t) => {
    const bytes = randomBytes(MIN_PART_SIZE + 7);
    const rec = await patch(await uploads.create('s3/web', 'acct'), bytes, 2);
    await t.rejects(uploads.commit(rec, sha(Buffer.from('other'))), { code: 'DIGEST_INVALID' });
    t.equal(await blobs.stat(sha(bytes)), undefined);
    t.throws(() => uploads.get(rec.id, 's3/web'), { code: 'BLOB_UPLOAD_UNKNOWN' });
  });

  t.test('a restart drops open sessions and aborts their multipart uploads', async (t) => {
    const rec = await patch(await uploads.create('s3/web', 'acct'), randomBytes(MIN_PART_SIZE + 100), 1);
    await uploads.beginAppend(rec, rec.offset).end().catch(() => {}); // the process "dies" holding it
    await waitFor('its first part to be uploaded', async () =>
      ((await client.send(new ListMultipartUploadsCommand({ Bucket }))).Uploads ?? []).some((u) => u.Key?.includes(rec.id)));
    const restarted = new Uploads(store, backend(), clock, { staleAfterMs: 60_000 });
    await restarted.init();
    t.throws(() => restarted.get(rec.id, 's3/web'), { code: 'BLOB_UPLOAD_UNKNOWN' }, 'not resumable on S3');
    t.equal(await store.metadata.get(blobKs.uploads, rec.id), undefined, 'record removed');
    const r = await client.send(new ListMultipartUploadsCommand({ Bucket }));
    t.same(r.Uploads ?? [], [], 'no multipart upload left');
  });

  t.test('concurrent sessions with chunked PATCHes of any size stay within the upload memory budget', async (t) => {
    /** Records the most memory ever taken (taken within the limit, or forced past it). */
    class Peak extends UploadMemory {
      peak = 0;
      override tryTake(bytes: number): boolean {
        const ok = super.tryTake(bytes);
        this.peak = Math.max(this.peak, this.used);
        return ok;
      }
      override force(bytes: number): void {
        super.force(bytes);
        this.forced += bytes;
        this.peak = Math.max(this.peak, this.used);
      }
      forced = 0;
    }
    const SESSIONS = 8;
    // Room for three parts beside the transports' receive buffers: 8 sessions contend for 3 slots.
    const limit = PART_HEADROOM + 3 * MIN_PART_SIZE;
    for (let round = 0; round < 4; round++) {
      const memory = new Peak(limit);
      const tmp2 = tempDir();
      const store2 = await openStore(tmp2.dir);
      // Odd rounds: sessions kept for one PutObject up to 2 parts, sent as parts when they grow
      // past that or when the budget has no further slot for them.
      const bounded = new Uploads(store2, round % 2 ? backend(2 * MIN_PART_SIZE) : backend(), clock, { staleAfterMs: 60_000, memory });
      await bounded.init();
      let refused = 0;
      const pushOne = async (i: number) => {
        const bytes = randomBytes(MIN_PART_SIZE * 2 + Math.floor(Math.random() * MIN_PART_SIZE));
        let rec: UploadRecord | undefined;
        try {
          rec = await bounded.create(`s3/m${i}`, `acct${i}`);
          for (let at = 0; at < bytes.length;) {
            const patchEnd = Math.min(bytes.length, at + 1 + Math.floor(Math.random() * 3 * 1024 * 1024));
            let w;
            try {
              w = bounded.beginAppend(rec, rec.offset);
            } catch (e) {
              // 503 before any byte: the client retries the PATCH once memory is given back.
              if ((e as { code?: string }).code !== 'UNAVAILABLE') throw e;
              refused++;
              // Nothing held: no memory will ever be given back, so waiting would hang the test.
              if (memory.used === 0) throw new Error('an append was refused with the whole budget free');
              await new Promise<void>((resolve) => memory.wait(resolve));
              continue;
            }
            while (at < patchEnd) {
              const n = Math.min(patchEnd - at, 1 + Math.floor(Math.random() * 64 * 1024));
              const more = w.write(bytes.subarray(at, at + n));
              at += n;
              if (!more && at < patchEnd) await new Promise<void>((resolve) => w.onDrain(resolve));
            }
            rec = await bounded.finishAppend(rec, w, true);
          }
          t.same(await bounded.commit(rec, sha(bytes)), { digest: sha(bytes), size: bytes.length });
          t.equal((await blobs.stat(sha(bytes)))?.size, bytes.length, 'stored');
        } catch (e) {
          if (rec) await bounded.cancel(rec).catch(() => {});
          throw e;
        }
      };
      await Promise.all(Array.from({ length: SESSIONS }, (_, i) => pushOne(i)));
      t.ok(memory.peak <= limit + memory.forced, `round ${round}: peak ${memory.peak} bytes of upload memory, limit ${limit} (+ ${memory.forced} forced by transports), ${refused} appends refused`);
      t.ok(memory.peak > MIN_PART_SIZE, `round ${round}: part buffers are counted (peak ${memory.peak})`);
      t.equal(memory.used, 0, `round ${round}: every buffer given back`);
      await store2.close();
      tmp2.cleanup();
    }
  });
});
