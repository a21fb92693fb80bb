/**
 * The store-size gauges of /metrics (slipway_store_blobs, _blob_bytes, _manifests,
 * _manifest_bytes) are running totals kept as records change (engine/storage/running-totals.ts).
 * Race with random timing through the real HTTP interface: clients push the same and new blobs
 * and images into several repositories, push images again, delete them by digest, while GC
 * runs beside them; afterwards, and again after a GC past the grace has deleted what nothing
 * references, every gauge equals what a count of every record gives, and `slipway fsck`'s totals
 * check finds nothing.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { tempDir } from '../helpers/server.js';
import { basic, createApp, http } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256, type BuiltImage } from '../helpers/image.js';
import { pushBlob, pushBuiltImage, type Target } from '../helpers/registry.js';
import { sampleSum, scrape } from '../helpers/metrics.js';
import { prng } from '../helpers/metadata-contract-suite.js';
import { checkBlobTotals } from '../../engine/blobs/refs.js';
import { checkManifestTotals } from '../../engine/registry/registry.js';

t.test('store totals stay exact under concurrent pushes, deletes and GC', async (t) => {
  const tmp = tempDir();
  const ts = await startInProcess({ dataDir: tmp.dir, env: { SLIPWAY_GC_GRACE: '60' } });
  t.teardown(async () => { await ts.stop(); tmp.cleanup(); });
  const me: Target = { registry: ts.urls.registry, auth: basic('_', ts.operator.apiKey) };
  await createApp(ts.api, ts.operator.apiKey, 'tot');
  const rand = prng(0x70 ^ Date.now());
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const repos = ['tot/web', 'tot/worker', 'tot/cron'];
  const images: BuiltImage[] = [];
  for (let i = 0; i < 4; i++) images.push(await buildImage(join(tmp.dir, `img${i}`), sampleSpec()));
  const loose = Array.from({ length: 6 }, () => randomBytes(1 + Math.floor(rand() * 300_000)));

  const counted = async () => {
    const b = await checkBlobTotals(ts.server.store.metadata);
    const m = await checkManifestTotals(ts.server.store.metadata);
    return { b, m };
  };
  const gaugesShow = async (label: string) => {
    const { b, m } = await counted();
    t.same(b.recorded, b.counted, `${label}: the blob totals equal the records counted (${b.counted.count} blobs, ${b.counted.bytes} bytes)`);
    t.same(m.recorded, m.counted, `${label}: the manifest totals equal the records counted (${m.counted.count} manifests, ${m.counted.bytes} bytes)`);
    const want = [b.counted.count, b.counted.bytes, m.counted.count, m.counted.bytes];
    let seen: number[] = [];
    await waitFor(`${label}: /metrics to show the totals`, async () => {
      const text = await scrape(ts.urls.admin);
      seen = ['slipway_store_blobs', 'slipway_store_blob_bytes', 'slipway_store_manifests', 'slipway_store_manifest_bytes'].map((n) => sampleSum(text, n));
      return seen.every((v, i) => v === want[i]);
    }, { timeoutMs: 15_000, intervalMs: 100 }).catch(() => undefined);
    t.same(seen, want, `${label}: /metrics shows them`);
  };

  const pause = () => new Promise((r) => setTimeout(r, Math.floor(rand() * 15)));
  const statuses = new Map<string, number>();
  const tally = (what: string, status: number) => statuses.set(`${what} ${status}`, (statuses.get(`${what} ${status}`) ?? 0) + 1);
  const clients = Array.from({ length: 6 }, async () => {
    for (let i = 0; i < 8; i++) {
      await pause();
      const roll = rand();
      const repo = pick(repos);
      if (roll < 0.35) {
        await pushBuiltImage(me, repo, `t${Math.floor(rand() * 3)}`, pick(images));
        tally('image push', 201);
      } else if (roll < 0.6) {
        tally('blob push', (await pushBlob(me, repo, pick(loose))).status);
      } else if (roll < 0.85) {
        const img = pick(images);
        tally('manifest delete', (await http('DELETE', `${me.registry}/v2/${repo}/manifests/${sha256(img.manifest)}`, { headers: me.auth })).status);
      } else {
        await ts.server.collectGarbage();
        tally('gc', 0);
      }
    }
  });
  await Promise.all(clients);
  t.comment([...statuses].map(([k, n]) => `${k}: ${n}`).join(', '));
  t.ok([...statuses.keys()].every((k) => /^(image push 201|blob push 201|manifest delete (202|404)|gc 0)$/.test(k)), 'every request answered as expected');
  await gaugesShow('after the race');

  // Past the grace, GC deletes every blob no manifest references and every loose blob.
  ts.clock.advance(61_000);
  const report = (await ts.server.collectGarbage())!;
  t.ok(report.blobs.deleted >= 1, `GC past the grace deleted ${report.blobs.deleted} blobs`);
  await gaugesShow('after GC');
});
