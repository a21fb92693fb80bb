/**
 * Node-owned upload sessions in the engine, on a real PostgreSQL and a real Ceph RGW (one bucket
 * and prefix, two nodes, plus the key layout of builds before node names):
 * - the S3 backend keys a node's sessions under `uploads/<node>/`, `sessions()` reports each
 *   session's node (`''` for the old layout) and `abortSession(id, node)` aborts only that one;
 * - a node's start-up recovery aborts its own and the old layout's sessions without a record and
 *   leaves the other node's;
 * - the reaper lock's holder aborts another node's session that has no record only once it is
 *   older than twice the TTL;
 * - the per-account session limit counts the other node's recorded sessions (after a refresh).
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { postgresSkip } from '../helpers/postgres.js';
import { startSharedStores } from '../helpers/cluster.js';
import { ManualClock } from '../../engine/clock.js';
import { storeOver } from '../../engine/store.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { S3BlobBackend, MIN_PART_SIZE } from '../../engine/blobs/s3-backend.js';
import { Uploads } from '../../engine/blobs/uploads.js';
import type { BlobWriter } from '../../engine/blobs/contract.js';

const skip = cephSkip() || postgresSkip();
const PREFIX = 'sessions/';
const TTL = 60_000;

t.test('node-owned sessions in the S3 backend and the upload service', { skip }, async (t) => {
  const { db, s3 } = await startSharedStores(t);
  const clock = new ManualClock(Date.now());
  const backend = (node?: string) => new S3BlobBackend({ client: s3.client, bucket: s3.bucket, prefix: PREFIX, partSize: MIN_PART_SIZE, putLimit: MIN_PART_SIZE, ...(node === undefined ? {} : { node }) });
  const uploadsOf = async (node: string, maxSessionsPerAccount?: number) => {
    const store = await storeOver(await PostgresMetadataStore.open({ connectionString: db.connectionString }));
    t.teardown(() => store.close());
    return new Uploads(store, backend(node), clock, { staleAfterMs: TTL, node, ...(maxSessionsPerAccount ? { maxSessionsPerAccount } : {}) });
  };
  /** A session with one part uploaded (a multipart upload open), left suspended. */
  const withPart = async (b: S3BlobBackend, id: string): Promise<BlobWriter> => {
    const w = await b.create(id);
    await w.append(randomBytes(MIN_PART_SIZE + 10));
    await w.sync(); // the part is uploaded (the multipart upload exists)
    w.suspend();
    return w;
  };
  const keys = async () => ((await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: PREFIX }))).Uploads ?? []).map((u) => u.Key!.slice(PREFIX.length)).sort();
  const sessions = async (b: S3BlobBackend) => { const out: string[] = []; for await (const s of b.sessions()) out.push(`${s.node}/${s.id}`); return out.sort(); };
  const [idA, idB, idOld] = ['a'.repeat(32), 'b'.repeat(32), 'c'.repeat(32)];

  t.test('keys, listing and aborts per node', async (t) => {
    await withPart(backend('node-a'), idA);
    await withPart(backend('node-b'), idB);
    await withPart(backend(), idOld);
    t.same(await keys(), [`uploads/${idOld}/data`, `uploads/node-a/${idA}/data`, `uploads/node-b/${idB}/data`], 'keys carry the node');
    t.same(await sessions(backend('node-a')), [`/${idOld}`, `node-a/${idA}`, `node-b/${idB}`], 'every session is listed with its node');
    await backend('node-a').abortSession(idB, 'node-a');
    t.equal((await keys()).length, 3, "aborting a session id under another node's name leaves the session alone");
  });

  t.test("start-up recovery: its own and the old layout's sessions without a record, not the other node's", async (t) => {
    const a = await uploadsOf('node-a');
    await a.init();
    t.same(await keys(), [`uploads/node-b/${idB}/data`], "node-a aborted its own and the old layout's; node-b's is left");
  });

  t.test("the lock holder aborts another node's session without a record only past twice the TTL", async (t) => {
    const a = await uploadsOf('node-a');
    await a.init();
    t.equal(await a.peers.reap(), 0, 'a fresh session of node-b is left');
    // The multipart upload's start is RGW's (real) time, which ran on while the subtests above
    // did: move the manual clock past twice the TTL after *now*, not after the clock's start.
    clock.advance(Math.max(0, Date.now() - clock.now()) + 2 * TTL + 5000);
    t.equal(await a.peers.reap(), 1, 'one long dead session of node-b reaped');
    t.same(await keys(), [], 'its multipart upload aborted');
  });

  t.test("the per-account limit counts the other node's recorded sessions", async (t) => {
    const a = await uploadsOf('node-a', 3);
    const b = await uploadsOf('node-b', 3);
    await a.init();
    await b.init();
    for (let i = 0; i < 2; i++) {
      const rec = await a.create('app/web', 'acct');
      const w = a.beginAppend(rec, 0);
      w.write(randomBytes(100));
      await a.finishAppend(rec, w, true);
    }
    t.equal(b.openSessions('acct'), 0, 'not seen before a refresh');
    await b.peers.refresh();
    t.equal(b.openSessions('acct'), 2, "node-a's two recorded sessions count on node-b");
    await b.create('app/web', 'acct');
    await t.rejects(b.create('app/web', 'acct'), { code: 'RATE_LIMITED' }, 'the limit of 3 is reached across the nodes');
    t.equal(a.openSessions('acct'), 2, "node-b's session without bytes is not seen by node-a");
  });
});
