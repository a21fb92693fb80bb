/**
 * The reaper race of engine/blobs/peer-sessions.ts, on a real PostgreSQL and a real Ceph RGW:
 * node-a owns a session idle past both the upload TTL and the other-node limit; in each round,
 * with random timing, node-a appends to it and completes it while node-b (the reaper lock's
 * holder) reaps other nodes' dead sessions and node-a's own reaper runs. After each round:
 * - a completed session's blob has its record and its object, of its size and digest;
 * - a session that did not complete left no blob (its bytes are unique to the round);
 * - a session record exists only while node-a still holds the session open (no record that
 *   nobody will remove), and once node-a's reaper has run: no record, no multipart upload and
 *   no session object under node-a's keys;
 * - node-a's operations fail only with the registry's own errors (busy, unknown, invalid, and
 *   the blob store's unavailability when RGW answers a completion racing the abort with a 500).
 * Sessions of the two kinds: smaller than one part (no multipart upload yet) and larger.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { postgresSkip } from '../helpers/postgres.js';
import { startSharedStores } from '../helpers/cluster.js';
import { digestOf } from '../helpers/engine.js';
import { ManualClock } from '../../engine/clock.js';
import { storeOver } from '../../engine/store.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { S3BlobBackend, MIN_PART_SIZE } from '../../engine/blobs/s3-backend.js';
import { Uploads } from '../../engine/blobs/uploads.js';
import { blobRecord, uploadSession } from '../../engine/blobs/refs.js';
import { isSlipwayError } from '../../engine/errors.js';
import type { UploadRecord } from '../../engine/blobs/records.js';

const skip = cephSkip() || postgresSkip();
const ROUNDS = Number(process.env.SLIPWAY_TEST_ROUNDS ?? 40);
const PREFIX = 'reaper/';
const TTL = 1000;
/**
 * What node-a may answer: busy, unknown, invalid; and BLOB_STORE_UNAVAILABLE, which RGW causes by answering
 * a CompleteMultipartUpload that races the abort with HTTP 500 ("This multipart completion is
 * already in progress"): a 503 with Retry-After, after which the session is gone.
 */
const ALLOWED = new Set(['UPLOAD_BUSY', 'BLOB_UPLOAD_UNKNOWN', 'BLOB_UPLOAD_INVALID', 'BLOB_STORE_UNAVAILABLE']);

t.test("the reaper lock's holder reaping a node's session while that node appends and completes it", { skip }, async (t) => {
  const { db, s3 } = await startSharedStores(t, { memstoreBytes: 2 * 1024 ** 3 });
  const clock = new ManualClock(Date.now());
  /** A node: its own connection pool to the database, its own S3 backend instance. */
  const node = async (name: string) => {
    const store = await storeOver(await PostgresMetadataStore.open({ connectionString: db.connectionString }));
    t.teardown(() => store.close());
    const blobs = new S3BlobBackend({ client: s3.client, bucket: s3.bucket, prefix: PREFIX, partSize: MIN_PART_SIZE, putLimit: MIN_PART_SIZE, node: name });
    const uploads = new Uploads(store, blobs, clock, { staleAfterMs: TTL, node: name });
    await uploads.init();
    return { store, blobs, uploads };
  };
  const a = await node('node-a');
  const b = await node('node-b');
  const under = async (id: string) => {
    const Prefix = `${PREFIX}uploads/node-a/${id}/`;
    const mp = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix }));
    const objs = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix }));
    return (mp.Uploads?.length ?? 0) + (objs.KeyCount ?? 0);
  };
  /** A random delay of up to `ms`: node-a's start is spread wider, so node-b's reap (a listing, a range read, a transaction) lands before, inside and after node-a's append and commit. */
  const jitter = (ms: number) => sleep(Math.floor(Math.random() * ms));
  const append = async (rec: UploadRecord, bytes: Buffer, lease?: ReturnType<Uploads['claim']>) => {
    const w = a.uploads.beginAppend(rec, rec.offset, lease);
    w.write(bytes);
    return a.uploads.finishAppend(rec, w, true);
  };
  const outcomes = { completed: 0, failed: 0, reapedByB: 0, reapedByA: 0 };
  const codes = new Map<string, number>();

  for (let round = 0; round < ROUNDS; round++) {
    const large = round % 2 === 1;
    const first = randomBytes(large ? MIN_PART_SIZE + 4096 : 64 * 1024);
    const second = randomBytes(large ? MIN_PART_SIZE : 32 * 1024);
    const whole = Buffer.concat([first, second]);
    const digest = digestOf(whole);
    const rec = await append(await a.uploads.create('app/web', 'acct'), first).catch(async () => {
      throw new Error(`round ${round}: the first chunk failed`);
    });
    clock.advance(3 * TTL); // idle past the TTL and past twice the TTL (the other-node limit)
    let completed = false;
    const errors: unknown[] = [];
    const owner = (async () => {
      await jitter(200);
      try {
        const lease = a.uploads.claim(a.uploads.get(rec.id, 'app/web'), 'PUT');
        try {
          const more = await append(a.uploads.get(rec.id, 'app/web'), second, lease);
          await a.uploads.commit(more, digest, lease);
          completed = true;
        } finally {
          a.uploads.release(lease);
        }
      } catch (e) {
        errors.push(e);
      }
    })();
    let byB = 0;
    const reaperB = (async () => { await jitter(40); byB = await b.uploads.peers.reap(); outcomes.reapedByB += byB; })();
    const reaperA = round % 3 === 0 ? (async () => { await jitter(200); outcomes.reapedByA += await a.uploads.reap(); })() : Promise.resolve();
    await Promise.all([owner, reaperB, reaperA]);

    if (process.env.SLIPWAY_TEST_VERBOSE) t.comment(`round ${round}: ${large ? 'large' : 'small'}, completed ${completed}, reaped by node-b ${byB}, errors ${errors.map((e) => (e as Error).message).join('; ')}`);
    for (const e of errors) {
      const code = isSlipwayError(e) ? e.code : `${(e as Error).name}: ${(e as Error).message}`;
      codes.set(code, (codes.get(code) ?? 0) + 1);
      if (!ALLOWED.has(code)) t.fail(`round ${round}: node-a failed with ${code}: ${(e as Error).message}`);
    }
    const blob = await blobRecord(a.store.metadata, digest);
    const stat = await a.blobs.stat(digest);
    if (completed) {
      outcomes.completed++;
      if (blob?.size !== whole.length || stat?.size !== whole.length) t.fail(`round ${round}: completed, but record ${blob?.size} / object ${stat?.size} of ${whole.length} bytes`);
      const r = await a.blobs.open(digest);
      const back = Buffer.alloc(whole.length);
      let n = 0;
      while (n < back.length) {
        const got = await r.read(back.subarray(n), n);
        if (got === 0) break;
        n += got;
      }
      await r.close();
      if (!back.equals(whole)) t.fail(`round ${round}: the stored bytes are not the session's`);
    } else {
      outcomes.failed++;
      if (blob || stat) t.fail(`round ${round}: not completed, yet a blob exists (record ${!!blob}, object ${!!stat})`);
    }
    const stored = await uploadSession(a.store.metadata, rec.id);
    let live = true;
    try { a.uploads.get(rec.id, 'app/web'); } catch { live = false; }
    if (stored && !live) t.fail(`round ${round}: a record without a live session on its node`);
    // node-a's own reaper ends whatever the round left open.
    clock.advance(3 * TTL);
    await a.uploads.reap();
    if (await uploadSession(a.store.metadata, rec.id)) t.fail(`round ${round}: a record left after node-a's reaper`);
    if ((await under(rec.id)) !== 0) t.fail(`round ${round}: session bytes left under node-a's keys`);
  }
  t.ok(outcomes.completed + outcomes.failed === ROUNDS, `outcomes ${JSON.stringify(outcomes)}, errors ${JSON.stringify([...codes])}`);
  t.ok(outcomes.reapedByB > 0, 'node-b reaped node-a sessions in some rounds');
  t.ok(outcomes.completed > 0, 'node-a completed its session in some rounds');
});
