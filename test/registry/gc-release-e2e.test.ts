/**
 * Retention end to end: images pushed over HTTP, released with the real formation API
 * (`PATCH /apps/{app}/formation`, version=3.container-releases), the ManualClock of an
 * in-process server advanced, GC run on the server's store: the image never released goes after
 * a day, the image of the 21st-newest release goes after 30 days, the 20 newest releases keep
 * theirs, and the base layer every image shares survives and still pulls.
 */
import t from 'tap';
import { join } from 'node:path';
import { api } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, http } from '../helpers/http.js';
import { buildImage, sha256, type BuiltImage } from '../helpers/image.js';
import { pushBuiltImage, type Target } from '../helpers/registry.js';
import { GarbageCollector } from '../../engine/registry/gc.js';
import { releaseRetention } from '../../engine/platform/retention.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const CONTAINER = 'application/vnd.slipway+json; version=3.container-releases';

const ts = await startInProcess({ env: { SLIPWAY_GC_INTERVAL: '0' } });
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;
const me: Target = { registry: ts.server.urls.registry, auth: basic('_', key) };
const gc = new GarbageCollector(ts.server.store.metadata, new FsBlobBackend(ts.server.config.dataDir), ts.clock, releaseRetention);
if ((await api(ts, 'POST', '/apps', key, { name: 'keep' })).status !== 201) throw new Error('app create failed');

const base = { 'usr/lib/base.so': 'the same bytes in every image\n' };
async function push(tag: string): Promise<BuiltImage> {
  const img = await buildImage(join(ts.server.config.dataDir, 'test-images', tag), {
    layers: [{ files: base }, { files: { 'app/version': tag } }], config: { Cmd: ['./run', tag] },
  });
  return pushBuiltImage(me, 'keep/web', tag, img);
}
const status = async (img: BuiltImage) => (await http('GET', `${me.registry}/v2/keep/web/manifests/${img.manifestDigest}`, { headers: me.auth })).status;

const released: BuiltImage[] = [];
for (let v = 1; v <= 21; v++) {
  const img = await push(`v${v}`);
  const r = await api(ts, 'PATCH', '/apps/keep/formation', key, { updates: [{ type: 'web', docker_image: img.configDigest }] }, { accept: CONTAINER });
  if (r.status !== 200) throw new Error(`release ${v}: ${r.status} ${r.text}`);
  released.push(img);
}
const unreleased = await push('never');

t.test('after 25 hours: only the image never released', async (t) => {
  ts.clock.advance(25 * HOUR);
  const r = await gc.run();
  t.same(r.deletedImages.map((i) => i.digest), [unreleased.manifestDigest]);
  t.equal(await status(unreleased), 404);
  t.equal(await status(released[0]!), 200, 'the 21st-newest release keeps its 25-hour-old image');
  t.equal(r.blobs.deleted, 2, 'its config and own layer; the shared base layer stays');
});

t.test('after 31 days: the image of the 21st-newest release; the base layer survives', async (t) => {
  ts.clock.advance(30 * DAY);
  const r = await gc.run();
  t.same(r.deletedImages.map((i) => [i.digest, i.reason]), [[released[0]!.manifestDigest, 'expired']]);
  t.equal(await status(released[0]!), 404);
  for (const img of released.slice(1)) t.equal(await status(img), 200, `release image ${img.manifestDigest.slice(7, 19)} kept`);
  const baseLayer = released[20]!.layers[0]!;
  const pulled = await http('GET', `${me.registry}/v2/keep/web/blobs/${baseLayer.digest}`, { headers: me.auth });
  t.equal(sha256(pulled.bytes), baseLayer.digest, 'shared base layer pulls intact');
  const newest = await http('GET', `${me.registry}/v2/keep/web/manifests/v21`, { headers: me.auth });
  t.equal(newest.status, 200, 'the current release pulls by tag');
  const releases = await api(ts, 'GET', '/apps/keep/releases', key);
  t.equal(releases.json.length, 21, 'release records are kept; only images go');
});
