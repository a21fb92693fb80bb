/**
 * App rename on both metadata stores (docs/apps.md "Renaming an app"):
 * - race: clients push images to `<app>/web` over HTTP while the app is renamed, at a seeded
 *   random point (after a random number of acknowledged pushes); a client whose push is refused
 *   under the old name pushes again under the new one. Afterwards every acknowledged manifest
 *   is served intact (every blob) under the new name, the new repository's tags are exactly the
 *   acknowledged ones, and a new app taking the old name sees none of them. On the embedded store
 *   (LMDB) with one node; on PostgreSQL with two nodes (pushes through one, the rename through the other);
 * - manifest PUTs in flight: PUTs admitted under the old name while the rename commits (see inFlight);
 * - an upload session across the rename links its blob under no name (sessionAcrossRename);
 * - GC roots: an image released before the rename is kept by image retention after it, an image
 *   never released is not (the releases name the moved repository).
 */
import t from 'tap';
import type { Test } from 'tap';
import { startInProcess, type InProcessSlipway } from '../helpers/harness.js';
import { postgresSkip } from '../helpers/postgres.js';
import { api } from '../helpers/oauth.js';
import { basic, errCode, http } from '../helpers/http.js';
import { pushBlob, putManifest, startUpload, withDigest } from '../helpers/registry.js';
import { randomBytes } from 'node:crypto';
import { memImage, pushWithRetry, servedIntact, startTwoInProcessNodes, type MemImage } from '../helpers/cluster.js';
import { prng } from '../helpers/h1-generator.js';
import { layerTar, sha256 } from '../helpers/image.js';
import { GarbageCollector } from '../../engine/registry/gc.js';
import { releaseRetention } from '../../engine/platform/retention.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';

const SEED = Number(process.env.SEED ?? Math.floor(Math.random() * 2 ** 31));
t.comment(`seed ${SEED} (SEED=${SEED} to repeat)`);
const CONTAINER = 'application/vnd.slipway+json; version=3.container-releases';
const PUSHERS = 4;
const EACH = 5;

/** A small image no other push shares (its config and layer name the pusher, round and seed). */
function uniqueImage(label: string): MemImage {
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Cmd: ['./run'], Env: [`LABEL=${label}`, `SEED=${SEED}`] }, rootfs: { type: 'layers', diff_ids: [] } }));
  return memImage(config, [Buffer.from(`layer of ${label} ${SEED}\n`.repeat(64))]);
}

/**
 * The race on `pushTo` (pushes) and `renameOn` (the rename), both over one store.
 * @param rand the seeded generator deciding when the rename happens
 */
async function race(t: Test, pushTo: InProcessSlipway, renameOn: InProcessSlipway, key: string, prefix: string, rand: () => number): Promise<void> {
  const OLD = `${prefix}-old`, NEW = `${prefix}-new`;
  t.equal((await api(renameOn, 'POST', '/apps', key, { name: OLD })).status, 201);
  const target = { registry: pushTo.urls.registry, auth: basic('_', key) };
  const acked: Array<{ tag: string; img: MemImage; as: string }> = [];
  // In the first half, so the pushes after it overlap the rename on the slower store too.
  const renameAfter = 1 + Math.floor(rand() * (PUSHERS * EACH / 2));
  t.comment(`${prefix}: the rename starts after ${renameAfter} acknowledged pushes`);
  let renamed = false;
  let renameStatus = 0;
  const refused: string[] = [];
  const renaming = (async () => {
    while (acked.length < renameAfter) await new Promise((r) => setImmediate(r));
    // A rename whose transaction keeps conflicting with the pushes is answered 503 with
    // Retry-After (nothing changed): sent again as told, as for a manifest PUT.
    const answers: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await api(renameOn, 'PATCH', `/apps/${OLD}`, key, { name: NEW });
      renameStatus = r.status;
      answers.push(`${r.status}`);
      const retryAfter = r.status === 503 ? Number(r.headers['retry-after']) : NaN;
      if (!(retryAfter > 0)) { if (r.status !== 200) t.comment(`rename: ${r.status} ${r.text.slice(0, 200)}`); break; }
      await new Promise((done) => setTimeout(done, retryAfter * 1000));
    }
    t.comment(`${prefix}: rename answers ${answers.join(', ')}`);
    renamed = true;
  })();
  async function pusher(p: number): Promise<void> {
    for (let i = 0; i < EACH; i++) {
      const tag = `p${p}-${i}`;
      const img = uniqueImage(`${prefix}-${tag}`);
      for (let attempt = 0; attempt < 3; attempt++) {
        const as = renamed ? NEW : OLD;
        let outcome;
        try {
          outcome = await pushWithRetry(target, `${as}/web`, tag, img, 3);
        } catch (e) {
          outcome = { acked: false, last: (e as Error).message };
        }
        if (outcome.acked) { acked.push({ tag, img, as }); break; }
        refused.push(`${as}/web:${tag} ${outcome.last.slice(0, 80)}`);
        while (!renamed) await new Promise((r) => setTimeout(r, 5));
      }
    }
  }
  await Promise.all([renaming, ...Array.from({ length: PUSHERS }, (_, p) => pusher(p))]);
  t.equal(renameStatus, 200, 'the rename succeeded while pushes ran');
  t.equal(acked.length, PUSHERS * EACH, `every push was acknowledged in the end (${acked.filter((a) => a.as === OLD).length} under the old name; refusals: ${refused.length})`);
  t.comment(`refused under the old name and pushed again: ${JSON.stringify(refused.slice(0, 5))}`);
  const problems: string[] = [];
  for (const a of acked) problems.push(...await servedIntact(pushTo.urls.registry, key, `${NEW}/web`, a.tag, a.img));
  t.same(problems, [], 'every acknowledged manifest and its blobs are served intact under the new name');
  const tags = (await http('GET', `${pushTo.urls.registry}/v2/${NEW}/web/tags/list?n=1000`, { headers: target.auth })).json.tags as string[];
  t.same([...tags].sort(), acked.map((a) => a.tag).sort(), 'the new repository\'s tags are exactly the acknowledged pushes');
  t.equal((await api(renameOn, 'POST', '/apps', key, { name: OLD })).status, 201, 'the old name is free');
  const leaked: string[] = [];
  for (const a of acked) {
    const m = await http('GET', `${pushTo.urls.registry}/v2/${OLD}/web/manifests/${a.tag}`, { headers: target.auth });
    if (m.status !== 404) leaked.push(`${a.tag}: manifest ${m.status}`);
    for (const b of a.img.blobs) {
      const h = await http('HEAD', `${pushTo.urls.registry}/v2/${OLD}/web/blobs/${sha256(b)}`, { headers: target.auth });
      if (h.status !== 404) leaked.push(`${a.tag}: blob ${h.status}`);
    }
  }
  t.same(leaked, [], 'the new app of the old name sees none of them (manifests, tags, blob links)');
}

/**
 * Manifest PUTs admitted under the old name while the rename commits: the PUT inspects a layer
 * of several MB (worker reads and unpacks it) between admission and its transaction, and the
 * rename is sent a seeded random 0-150 ms after the PUT. Whichever commits first, a PUT answered
 * 201 is served under the new name, and one refused is NAME_UNKNOWN and stored nowhere.
 */
async function inFlight(t: Test, pushTo: InProcessSlipway, renameOn: InProcessSlipway, key: string, prefix: string, rand: () => number): Promise<void> {
  const target = { registry: pushTo.urls.registry, auth: basic('_', key) };
  const big = await layerTar({ 'big.bin': randomBytes(6 * 1024 * 1024) }, 1);
  const outcomes: string[] = [];
  for (let round = 0; round < 6; round++) {
    const OLD = `${prefix}-f${round}-old`, NEW = `${prefix}-f${round}-new`;
    t.equal((await api(renameOn, 'POST', '/apps', key, { name: OLD })).status, 201);
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Cmd: ['./run'], Env: [`R=${prefix}${round}`] }, rootfs: { type: 'layers', diff_ids: [] } }));
    const img = memImage(config, [big]);
    for (const b of img.blobs) t.equal((await pushBlob(target, `${OLD}/web`, b)).status, 201);
    const delay = Math.floor(rand() * 150);
    const put = putManifest(target, `${OLD}/web`, 'v1', img.manifest);
    await new Promise((r) => setTimeout(r, delay));
    const renamed = await api(renameOn, 'PATCH', `/apps/${OLD}`, key, { name: NEW });
    t.equal(renamed.status, 200, `round ${round}: renamed`);
    const m = await put;
    const under = await http('GET', `${pushTo.urls.registry}/v2/${NEW}/web/manifests/v1`, { headers: { ...target.auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    if (m.status === 201) {
      t.equal(under.status, 200, `round ${round} (rename after ${delay} ms): the acknowledged manifest is served under the new name`);
      t.equal(under.headers['docker-content-digest'], img.digest);
    } else {
      t.equal(errCode(m), 'NAME_UNKNOWN', `round ${round} (rename after ${delay} ms): a PUT ordered after the rename is refused NAME_UNKNOWN (${m.status})`);
      t.equal(under.status, 404, 'and stored under no name');
    }
    outcomes.push(`${delay} ms: ${m.status}`);
  }
  t.comment(`${prefix}: rename delay → manifest PUT status: ${outcomes.join(', ')}`);
}

/**
 * An upload session started under the old name and completed after the rename (admitted by the
 * session's `_state`): the client gets its 201, but the blob is linked under no name, so a new
 * app that takes the old name cannot serve it (the client pushes it again under the new name).
 */
async function sessionAcrossRename(t: Test, ts: InProcessSlipway, key: string): Promise<void> {
  const target = { registry: ts.urls.registry, auth: basic('_', key) };
  t.equal((await api(ts, 'POST', '/apps', key, { name: 'up-old' })).status, 201);
  const blob = randomBytes(8192);
  const location = await startUpload(target, 'up-old/web');
  t.equal((await http('PATCH', location, { headers: { 'content-type': 'application/octet-stream' }, body: blob.subarray(0, 4096) })).status, 202, 'first chunk under the old name');
  t.equal((await api(ts, 'PATCH', '/apps/up-old', key, { name: 'up-new' })).status, 200, 'renamed');
  const done = await http('PUT', withDigest(location, sha256(blob)), { headers: { 'content-type': 'application/octet-stream' }, body: blob.subarray(4096) });
  t.equal(done.status, 201, 'the session completes (its bytes are verified and recorded)');
  t.equal((await http('HEAD', `${ts.urls.registry}/v2/up-new/web/blobs/${sha256(blob)}`, { headers: target.auth })).status, 404, 'not linked under the new name: the client pushes it again there');
  t.equal((await api(ts, 'POST', '/apps', key, { name: 'up-old' })).status, 201, 'a new app takes the old name');
  t.equal((await http('HEAD', `${ts.urls.registry}/v2/up-old/web/blobs/${sha256(blob)}`, { headers: target.auth })).status, 404, 'and cannot serve the blob');
}

t.test('embedded store (LMDB): pushes while the app is renamed; GC roots follow the rename', async (t) => {
  const ts = await startInProcess({ env: { SLIPWAY_GC_INTERVAL: '0' } });
  t.teardown(() => ts.stop());
  const key = ts.operator.apiKey;
  await t.test('race', (t) => race(t, ts, ts, key, 'lm', prng(SEED)));
  await t.test('manifest PUTs in flight', (t) => inFlight(t, ts, ts, key, 'lm', prng(SEED + 1)));
  await t.test('an upload session across the rename', (t) => sessionAcrossRename(t, ts, key));

  await t.test('an image released before the rename is kept by retention; one never released is not', async (t) => {
    t.equal((await api(ts, 'POST', '/apps', key, { name: 'gc-old' })).status, 201);
    const target = { registry: ts.urls.registry, auth: basic('_', key) };
    const released = uniqueImage('gc-released'), unreleased = uniqueImage('gc-unreleased');
    t.ok((await pushWithRetry(target, 'gc-old/web', 'v1', released)).acked);
    t.ok((await pushWithRetry(target, 'gc-old/web', 'v2', unreleased)).acked);
    const configDigest = JSON.parse(released.manifest.toString()).config.digest;
    const release = await api(ts, 'PATCH', '/apps/gc-old/formation', key, { updates: [{ type: 'web', docker_image: configDigest }] }, { accept: CONTAINER });
    t.equal(release.status, 200, `v1 released ${release.status === 200 ? '' : release.text}`);
    t.equal((await api(ts, 'PATCH', '/apps/gc-old', key, { name: 'gc-new' })).status, 200, 'renamed');
    ts.clock.advance(3 * 24 * 3600_000);
    const gc = new GarbageCollector(ts.server.store.metadata, new FsBlobBackend(ts.server.config.dataDir), ts.clock, releaseRetention);
    const report = await gc.run();
    t.same(report.deletedImages.filter((i) => i.repository.startsWith('gc-')).map((i) => `${i.repository}@${i.digest}`), [`gc-new/web@${unreleased.digest}`], 'of the renamed app, GC deleted only the image never released (the race\'s images are unreleased too)');
    t.same(await servedIntact(ts.urls.registry, key, 'gc-new/web', released.digest, released), [], 'the released image is still served under the new name');
  });
});

t.test('PostgreSQL, two nodes: pushes through one while the other renames the app', { skip: postgresSkip() }, async (t) => {
  const { a, b, key } = await startTwoInProcessNodes(t);
  await t.test('race', (t) => race(t, a, b, key, 'pg', prng(SEED ^ 0x5bd1e995)));
  await t.test('manifest PUTs in flight', (t) => inFlight(t, a, b, key, 'pg', prng(SEED + 2)));
});
