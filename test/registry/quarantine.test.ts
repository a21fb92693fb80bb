/**
 * Blob quarantine, through `slipway serve`: blob files planted in a stopped server's data
 * directory (wrong bytes of the right size, a truncated file) are found at the restart that
 * migrates a store of an older build, are not served (BLOB_UNKNOWN, so clients push again) and
 * not deduplicated onto, and a fresh push of the same digest heals them; the image pulls again.
 * A blob whose file shrinks or vanishes while the server runs is caught by the size check of
 * GET at once, and of HEAD once the last passed check is older than HEAD_CHECK_REUSE_MS.
 */
import t from 'tap';
import { readFileSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startInProcess, waitFor, type InProcessSlipway } from '../helpers/harness.js';
import { HEAD_CHECK_REUSE_MS } from '../../engine/blobs/quarantine.js';
import { basic, createApp, errCode, http } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { pushBlob, pushBuiltImage, type Target } from '../helpers/registry.js';
import { openStore } from '../../engine/store.js';
import { meta } from '../../engine/storage/meta-keyspace.js';

const tmp = tempDir();
let server: InProcessSlipway = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
await createApp(server.urls.api, key, 'quar');
const target = (): Target => ({ registry: server.urls.registry, auth: basic('_', key) });
const file = (digest: string) => join(tmp.dir, 'blobs', 'sha256', digest.slice(7, 9), digest.slice(7));
const get = (digest: string, method = 'GET') => http(method, `${server.urls.registry}/v2/quar/web/blobs/${digest}`, { headers: target().auth });

const img = await buildImage(join(tmp.dir, '..', `quar-img-${process.pid}`), sampleSpec());
await pushBuiltImage(target(), 'quar/web', 'v1', img);
const [small, big] = [img.layers[0]!, img.layers[1]!];

t.test('planted bad files are quarantined at the restart that migrates an older store', async (t) => {
  await server.stop();
  // Wrong bytes of the right size (only sha256 finds it), and a truncated file (size finds it).
  const wrong = Buffer.from(small.bytes);
  wrong[wrong.length >> 1] ^= 0xff;
  writeFileSync(file(small.digest), wrong);
  truncateSync(file(big.digest), 1000);
  // As if written by a build before store schema 6.
  const store = await openStore(tmp.dir);
  await store.metadata.transact((tx) => tx.put(meta, 'schema', 5));
  await store.close();
  server = await startInProcess({ dataDir: tmp.dir });

  for (const layer of [small, big]) {
    const r = await get(layer.digest);
    t.equal(r.status, 404, `GET of a bad blob: ${r.text.slice(0, 200)}`);
    t.equal(errCode(r), 'BLOB_UNKNOWN');
    t.equal((await get(layer.digest, 'HEAD')).status, 404, 'HEAD too');
  }
  const cfg = await get(img.configDigest);
  t.equal(cfg.status, 200, 'a good blob is still served');
  t.equal(sha256(cfg.bytes), img.configDigest);
  const m = await http('GET', `${server.urls.registry}/v2/quar/web/manifests/v1`, { headers: { ...target().auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
  t.equal(m.status, 200, 'the manifest is still there');
});

t.test('a fresh push of the same digest is not deduplicated onto the bad bytes: it heals them', async (t) => {
  for (const layer of [small, big]) {
    const r = await pushBlob(target(), 'quar/web', layer.bytes);
    t.equal(r.status, 201, r.text);
    const back = await get(layer.digest);
    t.equal(back.status, 200);
    t.ok(back.bytes.equals(layer.bytes), 'served bytes are the pushed ones');
    t.ok(readFileSync(file(layer.digest)).equals(layer.bytes), 'the file was replaced');
  }
  // The image pulls again, whole.
  const m = await http('GET', `${server.urls.registry}/v2/quar/web/manifests/v1`, { headers: { ...target().auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
  for (const l of JSON.parse(m.text).layers as Array<{ digest: string; size: number }>) {
    const r = await get(l.digest);
    t.equal(r.status, 200);
    t.equal(r.bytes.length, l.size);
    t.equal(sha256(r.bytes), l.digest);
  }
});

t.test('a blob whose file shrinks while serving is not served, and heals on push', async (t) => {
  const data = randomBytes(70_000);
  const digest = sha256(data);
  t.equal((await pushBlob(target(), 'quar/web', data)).status, 201);
  truncateSync(file(digest), 100);
  const r = await get(digest);
  t.equal(r.status, 404, 'never the short bytes');
  t.equal(errCode(r), 'BLOB_UNKNOWN');
  t.equal((await pushBlob(target(), 'quar/web', data)).status, 201);
  t.equal(statSync(file(digest)).size, data.length);
  const again = await get(digest);
  t.equal(again.status, 200);
  t.ok(again.bytes.equals(data));
});

t.test('HEAD of a blob whose file changes behind the server stops answering 200 once its last check is stale', async (t) => {
  for (const change of [(f: string) => truncateSync(f, 10), (f: string) => unlinkSync(f)]) {
    const data = randomBytes(50_000);
    const digest = sha256(data);
    t.equal((await pushBlob(target(), 'quar/web', data)).status, 201);
    t.equal((await get(digest, 'HEAD')).status, 200, 'checked and passed');
    const changedAt = performance.now();
    change(file(digest));
    // Within HEAD_CHECK_REUSE_MS of the passed check a HEAD may still answer 200; never later.
    await waitFor('HEAD refuses the changed blob', async () => (await get(digest, 'HEAD')).status === 404, { timeoutMs: 30_000, intervalMs: 50 });
    t.comment(`HEAD answered 404 ${Math.round(performance.now() - changedAt)} ms after the change (reuse window ${HEAD_CHECK_REUSE_MS} ms)`);
    const r = await get(digest);
    t.equal(r.status, 404, 'quarantined: GET refuses it too');
    t.equal(errCode(r), 'BLOB_UNKNOWN');
    t.equal((await pushBlob(target(), 'quar/web', data)).status, 201, 'a push heals it');
    t.equal((await get(digest, 'HEAD')).status, 200);
  }
});

t.test('GET checks the file every time, even right after a passed HEAD', async (t) => {
  const data = randomBytes(40_000);
  const digest = sha256(data);
  t.equal((await pushBlob(target(), 'quar/web', data)).status, 201);
  t.equal((await get(digest, 'HEAD')).status, 200);
  truncateSync(file(digest), 5);
  const r = await get(digest);
  t.equal(r.status, 404, 'never the short bytes');
  t.equal(errCode(r), 'BLOB_UNKNOWN');
  t.equal((await get(digest, 'HEAD')).status, 404, 'and HEAD follows the quarantine at once');
});
