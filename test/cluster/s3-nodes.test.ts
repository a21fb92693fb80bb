/**
 * Two `slipway serve` nodes (node-a, node-b) on one real PostgreSQL and one bucket + prefix of
 * a real Ceph RADOS Gateway, each with its own upload URL (docs/storage.md "Where a session
 * lives", docs/cluster.md "Upload sessions across nodes"):
 * - skopeo pushes through A and pulls byte-identical through B;
 * - B restarting while A has a session mid-push (a multipart upload open) leaves that session
 *   alone: A's push completes with the right digest;
 * - a PATCH, PUT, GET or DELETE of A's session sent to B gets 404 BLOB_UPLOAD_UNKNOWN naming
 *   node-a (by its `_state`, and by its record without one), writes nothing, and A's session
 *   still completes;
 * - kill -9 of A mid-push while B serves pulls and pushes without an error; A's restart aborts
 *   A's abandoned multipart uploads and drops its records, leaves B's open session alone, and
 *   every blob record has its object.
 * The reapers run every 200 ms on both nodes throughout.
 */
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { postgresSkip } from '../helpers/postgres.js';
import { startSharedStores } from '../helpers/cluster.js';
import { startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { tempDir } from '../helpers/server.js';
import { basic, createApp, errCode, errMessage, http, type Reply } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { pushBlob, startUpload, withDigest, type Target } from '../helpers/registry.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { scanBlobRecords, scanUploadSessions } from '../../engine/blobs/refs.js';
import type { Digest } from '../../engine/digest.js';

const skip = cephSkip() || postgresSkip();
const MiB = 1024 * 1024;
const PREFIX = 'nodes/';

t.test('two nodes on one PostgreSQL and one S3 prefix', { skip }, async (t) => {
  const { db, s3 } = await startSharedStores(t, { memstoreBytes: 2 * 1024 ** 3 });
  const serverKey = randomBytes(32).toString('base64');
  const dirs = { 'node-a': tempDir(), 'node-b': tempDir() };
  t.teardown(() => { for (const d of Object.values(dirs)) d.cleanup(); });

  /** Starts (or restarts) node `name` on its own data directory. */
  const start = (name: 'node-a' | 'node-b') => startSpawned({
    dataDir: dirs[name].dir, databaseUrl: db.connectionString,
    env: { ...s3.env(PREFIX), SLIPWAY_NODE_NAME: name, SLIPWAY_SERVER_KEY: serverKey, SLIPWAY_GC_INTERVAL: '0',
      // The reaper runs all along (each node its own sessions, the lock holder the others' long dead ones).
      SLIPWAY_UPLOAD_REAP_INTERVAL: '0.2' },
    startTimeoutMs: 60_000,
  });
  let a: SpawnedSlipway = await start('node-a');
  let b: SpawnedSlipway = await start('node-b');
  t.teardown(async () => { await a.stop(); await b.stop(); });
  const key = a.apiKey!;
  t.equal((await createApp(a.urls.api, key, 'app')).status, 201);
  const on = (n: SpawnedSlipway): Target => ({ registry: n.urls.registry, auth: basic('_', key) });
  /** `location` (a session URL of one node) sent to `n`'s upload host instead. */
  const at = (n: SpawnedSlipway, location: string) => location.replace(/^https?:\/\/[^/]+/, new URL(n.urls.upload).origin);
  const patch = (loc: string, chunk: Buffer, start: number) =>
    http('PATCH', loc, { body: chunk, headers: { 'content-range': `${start}-${start + chunk.length - 1}`, 'content-length': String(chunk.length), 'content-type': 'application/octet-stream' } });
  /** Multipart uploads open under the prefix, per node segment of their keys. */
  const multipart = async (node: string) => {
    const r = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: `${PREFIX}uploads/${node}/` }));
    return r.Uploads?.length ?? 0;
  };
  /** The session records in the database, per node. */
  const records = async () => {
    const m = await PostgresMetadataStore.open({ connectionString: db.connectionString });
    try {
      const out: Record<string, string[]> = {};
      for await (const { value } of scanUploadSessions(m)) (out[value.node ?? ''] ??= []).push(value.id);
      return out;
    } finally {
      await m.close();
    }
  };
  /** Pulls blob `bytes` through `n` and checks it. */
  const pulled = async (t: Test, n: SpawnedSlipway, bytes: Buffer, what: string) => {
    const got = await http('GET', `${n.urls.registry}/v2/app/web/blobs/${sha256(bytes)}`, { headers: on(n).auth });
    t.equal(got.status, 200, `${what}: GET through ${n === a ? 'A' : 'B'}`);
    t.ok(got.bytes.equals(bytes), `${what}: byte-identical`);
  };

  t.test('skopeo pushes through A and pulls byte-identical through B', { skip: skopeoSkip() }, async (t) => {
    const img = await buildImage(join(dirs['node-a'].dir, 'img'), sampleSpec());
    const push = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${new URL(a.urls.registry).host}/app/web:latest`]);
    t.equal(push.code, 0, push.stderr);
    const back = join(dirs['node-b'].dir, 'back');
    const pull = await skopeo(['copy', '--src-creds', `_:${key}`, '--src-tls-verify=false', `docker://${new URL(b.urls.registry).host}/app/web:latest`, `dir:${back}`]);
    t.equal(pull.code, 0, pull.stderr);
    for (const f of readdirSync(img.dir)) t.ok(readFileSync(join(back, f)).equals(readFileSync(join(img.dir, f))), `${f} byte-identical`);
  });

  t.test("B restarting leaves A's open session alone; A's push completes", async (t) => {
    const blob = randomBytes(13 * MiB);
    const loc = await startUpload(on(a), 'app/web');
    t.match(loc, new URL(a.urls.upload).origin, "the Location names A's upload host");
    t.match(loc, /_state=node-a~/, 'the capability names node-a');
    t.equal((await patch(loc, blob.subarray(0, 11 * MiB), 0)).status, 202, 'first chunk on A');
    // The part goes up in the background of the PATCH's reply.
    await waitFor("A's multipart upload to open", async () => (await multipart('node-a')) === 1, { timeoutMs: 60_000 });
    await b.stop();
    b = await start('node-b');
    t.equal(await multipart('node-a'), 1, "B's start-up recovery left A's multipart upload");
    t.ok((await records())['node-a']?.length === 1, "A's session record is still there");
    t.equal((await patch(loc, blob.subarray(11 * MiB), 11 * MiB)).status, 202, 'second chunk on A');
    const done = await http('PUT', withDigest(loc, sha256(blob)));
    t.equal(done.status, 201, done.text);
    t.equal(done.headers['docker-content-digest'], sha256(blob), 'the right digest');
    await pulled(t, b, blob, 'after B restarted');
  });

  t.test("a request for A's session sent to B: 404 naming node-a, nothing written; A's session completes", async (t) => {
    const blob = randomBytes(12 * MiB);
    const loc = await startUpload(on(a), 'app/web');
    t.equal((await patch(loc, blob.subarray(0, 6 * MiB), 0)).status, 202, 'first chunk on A');
    const wrong: Array<[string, Promise<Reply>]> = [
      ['PATCH', patch(at(b, loc), blob.subarray(6 * MiB), 6 * MiB)],
      ['PATCH without Content-Range', http('PATCH', at(b, loc), { body: blob.subarray(6 * MiB) })],
      ['PUT', http('PUT', withDigest(at(b, loc), sha256(blob)), { body: blob.subarray(6 * MiB) })],
      ['GET', http('GET', at(b, loc))],
      ['DELETE', http('DELETE', at(b, loc))],
      // Without the capability: admitted by credentials, the record names the owner.
      ['GET with credentials', http('GET', at(b, loc).replace(/\?.*$/, ''), { headers: on(b).auth })],
    ];
    for (const [what, reply] of wrong) {
      const r = await reply;
      t.equal(r.status, 404, `${what} on B: 404`);
      t.equal(errCode(r), 'BLOB_UPLOAD_UNKNOWN', `${what} on B: BLOB_UPLOAD_UNKNOWN`);
      t.match(errMessage(r), /belongs to node "node-a"/, `${what} on B: the message names node-a`);
    }
    t.equal(await multipart('node-b'), 0, 'B started no multipart upload');
    t.equal((await http('HEAD', `${b.urls.registry}/v2/app/web/blobs/${sha256(blob)}`, { headers: on(b).auth })).status, 404, 'no blob from the requests sent to B');
    const st = await http('GET', loc);
    t.equal(st.status, 204, 'A still has the session');
    t.equal(st.headers.range, `0-${6 * MiB - 1}`, 'at the offset A acknowledged');
    t.equal((await patch(loc, blob.subarray(6 * MiB), 6 * MiB)).status, 202, 'the rest on A');
    const done = await http('PUT', withDigest(loc, sha256(blob)));
    t.equal(done.status, 201, done.text);
    await pulled(t, b, blob, "A's session");
  });

  t.test('kill -9 of A mid-push: B serves on; A restarts, aborts its own leftovers only', async (t) => {
    // A: sessions with multipart uploads open and a chunk streaming when it dies.
    const inFlight: Array<Promise<unknown>> = [];
    for (let i = 0; i < 3; i++) {
      const loc = await startUpload(on(a), 'app/web');
      t.equal((await patch(loc, randomBytes(11 * MiB), 0)).status, 202);
      async function* slow() { for (let k = 0; k < 40; k++) { yield randomBytes(256 * 1024); await new Promise((r) => setImmediate(r)); } }
      inFlight.push(http('PATCH', loc, { body: slow() as never }).catch(() => undefined));
    }
    // B: one session mid-push across A's death and restart.
    const bBlob = randomBytes(12 * MiB);
    const bLoc = await startUpload(on(b), 'app/web');
    t.equal((await patch(bLoc, bBlob.subarray(0, 11 * MiB), 0)).status, 202, "B's first chunk");
    await waitFor("B's multipart upload to open", async () => (await multipart('node-b')) === 1, { timeoutMs: 60_000 });
    // B pushes and pulls while A dies.
    const failures: string[] = [];
    let stop = false;
    const traffic = (async () => {
      let n = 0;
      while (!stop || n < 3) {
        const bytes = randomBytes(n % 2 === 0 ? 64 * 1024 : 6 * MiB);
        const r = await pushBlob(on(b), 'app/web', bytes);
        if (r.status !== 201) failures.push(`push ${r.status} ${r.text}`);
        const got = await http('GET', `${b.urls.registry}/v2/app/web/blobs/${sha256(bytes)}`, { headers: on(b).auth });
        if (got.status !== 200 || !got.bytes.equals(bytes)) failures.push(`pull ${got.status}`);
        n++;
      }
      return n;
    })();
    await waitFor("A's multipart uploads to open", async () => (await multipart('node-a')) >= 3, { timeoutMs: 60_000 });
    await a.kill();
    await Promise.all(inFlight);
    t.ok(await multipart('node-a') >= 3, 'the dead node left its multipart uploads');
    t.equal((await records())['node-a']?.length, 3, "the dead node's records are left");
    a = await start('node-a');
    stop = true;
    const rounds = await traffic;
    t.same(failures, [], `B served ${rounds} pushes and pulls without an error`);
    t.equal(await multipart('node-a'), 0, "A's restart aborted its abandoned multipart uploads");
    t.same((await records())['node-a'] ?? [], [], "A's restart dropped its dead sessions' records");
    t.equal(await multipart('node-b'), 1, "B's multipart upload is untouched");
    t.equal((await patch(bLoc, bBlob.subarray(11 * MiB), 11 * MiB)).status, 202, "B's session continues");
    const done = await http('PUT', withDigest(bLoc, sha256(bBlob)));
    t.equal(done.status, 201, done.text);
    await pulled(t, a, bBlob, "B's session, pulled through the restarted A");
    t.equal((await pushBlob(on(a), 'app/web', randomBytes(6 * MiB))).status, 201, 'A pushes again');
    // Every blob record has its object, of its size.
    const m = await PostgresMetadataStore.open({ connectionString: db.connectionString });
    const backend = s3.backend(PREFIX);
    let n = 0, missing = 0;
    try {
      for await (const { key: d, value } of scanBlobRecords(m)) {
        n++;
        if ((await backend.stat(d as Digest))?.size !== value.size) missing++;
      }
    } finally {
      await m.close();
    }
    t.ok(n > 0, `blob records (${n})`);
    t.equal(missing, 0, 'no record without its object');
    for (const n of [a, b]) t.notMatch(n.output(), /upload reaper failed/, 'no reaper round failed');
  });
});
