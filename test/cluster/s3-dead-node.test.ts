/**
 * The server's reaper timer on two nodes sharing one PostgreSQL and one S3 prefix (Ceph RGW),
 * with one clock moved by the test (server/main.ts, engine/blobs/peer-sessions.ts):
 * - each node reaps its own sessions idle past SLIPWAY_UPLOAD_TTL (record and multipart upload);
 * - the sessions of a node that stopped and never came back are left alone at the TTL, and
 *   reaped by the other node (the reaper lock's holder) once idle past twice the TTL.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { postgresSkip } from '../helpers/postgres.js';
import { startSharedStores } from '../helpers/cluster.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { startUpload } from '../helpers/registry.js';
import { ManualClock } from '../../engine/clock.js';
import { scanUploadSessions } from '../../engine/blobs/refs.js';

const skip = cephSkip() || postgresSkip();
const PREFIX = 'dead/';
const TTL_S = 60;
const MiB = 1024 * 1024;

t.test("a dead node's sessions are reaped by another node past twice the TTL, not before", { skip }, async (t) => {
  const { db, s3 } = await startSharedStores(t);
  const clock = new ManualClock(Date.now());
  const serverKey = randomBytes(32).toString('base64');
  const start = (node: string) => startInProcess({
    clock, databaseUrl: db.connectionString,
    env: { ...s3.env(PREFIX), SLIPWAY_NODE_NAME: node, SLIPWAY_SERVER_KEY: serverKey, SLIPWAY_UPLOAD_TTL: String(TTL_S), SLIPWAY_UPLOAD_REAP_INTERVAL: '0.1', SLIPWAY_GC_INTERVAL: '0' },
  });
  const a = await start('node-a');
  const b = await start('node-b');
  t.teardown(async () => { await a.stop(); await b.stop(); });
  const key = a.apiKey!;
  t.equal((await createApp(a.api, key, 'app')).status, 201);
  const multipart = async (node: string) =>
    (await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: `${PREFIX}uploads/${node}/` }))).Uploads?.length ?? 0;
  const records = async (node: string) => {
    let n = 0;
    for await (const { value } of scanUploadSessions(b.server.store.metadata)) if (value.node === node) n++;
    return n;
  };
  const openSession = async (n: typeof a) => {
    const loc = await startUpload({ registry: n.urls.registry, auth: basic('_', key) }, 'app/web');
    const chunk = randomBytes(6 * MiB);
    const r = await http('PATCH', loc, { body: chunk, headers: { 'content-range': `0-${chunk.length - 1}`, 'content-length': String(chunk.length) } });
    t.equal(r.status, 202, `a session with a part on ${n === a ? 'node-a' : 'node-b'}`);
  };
  await openSession(a);
  await openSession(b);
  await waitFor('both multipart uploads to open', async () => (await multipart('node-a')) === 1 && (await multipart('node-b')) === 1, { timeoutMs: 60_000 });
  await a.stop(); // node-a goes away for good, leaving its session

  clock.advance((TTL_S + 30) * 1000);
  await waitFor("node-b's reaper to reap its own idle session", async () => (await records('node-b')) === 0 && (await multipart('node-b')) === 0, { timeoutMs: 60_000 });
  t.equal(await b.server.reapOtherNodesUploads(), 0, "a round of node-b's reaping of other nodes removes nothing at the TTL");
  t.equal(await records('node-a'), 1, "node-a's session record is left at the TTL");
  t.equal(await multipart('node-a'), 1, "node-a's multipart upload is left at the TTL");

  clock.advance(TTL_S * 1000);
  await waitFor("node-b to reap node-a's session past twice the TTL", async () => (await records('node-a')) === 0 && (await multipart('node-a')) === 0, { timeoutMs: 60_000 });
  t.pass("node-a's record and multipart upload are gone");
});
