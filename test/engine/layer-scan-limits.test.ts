/**
 * The layer scan's hard limits (workers/inspect-image.ts `scanLayer`, engine/registry/inspect-limits.ts),
 * on real gzip/tar layers in the filesystem blob backend: each limit stops the scan mid-stream
 * within a bounded time and says which limit it was; a layer at exactly the limit is scanned
 * whole. Hostile layers come from test/helpers/hostile-layers.ts (several GiB from a few MiB).
 */
import t from 'tap';
import { engineFixture } from '../helpers/engine.js';
import { inflatingLayer, manyEntriesLayer } from '../helpers/hostile-layers.js';
import { scanLayer } from '../../workers/inspect-image.js';
import { layerTar } from '../helpers/image.js';
import type { InspectLimits } from '../../engine/registry/inspect-limits.js';

const GiB = 1024 ** 3;
const roomy: InspectLimits = { maxInflatedBytes: 64 * GiB, maxEntries: 10_000_000, maxSeconds: 60 };

async function timedScan(e: Awaited<ReturnType<typeof engineFixture>>, layer: Buffer, limits: InspectLimits) {
  const digest = await e.upload('scan/web', layer);
  const t0 = performance.now();
  const scan = await scanLayer(e.blobs, digest, limits);
  return { scan, ms: Math.round(performance.now() - t0) };
}

t.test('inflated bytes: a 4 GiB layer of 4 MiB stops past the limit', async (t) => {
  const e = await engineFixture(t);
  const layer = inflatingLayer(4 * GiB);
  t.ok(layer.length < 8 * 1024 * 1024, `the layer is ${layer.length} bytes`);
  const { scan, ms } = await timedScan(e, layer, { ...roomy, maxInflatedBytes: 64 * 1024 * 1024 });
  t.equal(scan.unscanned, 'it inflates past 64 MiB');
  t.equal(scan.readable, true);
  t.ok(ms < 10_000, `stopped after ${ms} ms`);
});

t.test('entries: a million-entry tar stops past the limit; exactly the limit is scanned whole', async (t) => {
  const e = await engineFixture(t);
  const million = await timedScan(e, manyEntriesLayer(1_000_000), { ...roomy, maxEntries: 1000 });
  t.equal(million.scan.unscanned, 'it holds more than 1000 entries');
  t.ok(million.ms < 10_000, `stopped after ${million.ms} ms`);
  const whiteouts = manyEntriesLayer(20_000, 'dir/.wh.gone');
  const whole = await timedScan(e, whiteouts, { ...roomy, maxEntries: 20_000 });
  t.same(whole.scan, { whiteouts: 20_000, examples: new Array(5).fill('dir/.wh.gone'), readable: true }, 'at the limit: every entry read, no limit named');
  const cut = await scanLayer(e.blobs, (await e.upload('scan/web', whiteouts)), { ...roomy, maxEntries: 19_999 });
  t.equal(cut.unscanned, 'it holds more than 19999 entries');
  t.equal(cut.whiteouts, 19_999, 'the counts cover what was read');
});

t.test('wall time: a scan still inflating at the time limit stops there', async (t) => {
  const e = await engineFixture(t);
  const { scan, ms } = await timedScan(e, inflatingLayer(7 * GiB), { ...roomy, maxSeconds: 0.5 });
  t.equal(scan.unscanned, 'scanning it took longer than 0.5 s');
  t.ok(ms >= 450 && ms < 5_000, `stopped after ${ms} ms`);
});

t.test('an ordinary layer is scanned whole under the default limits; a non-tar is unreadable', async (t) => {
  const e = await engineFixture(t);
  const { DEFAULT_INSPECT_LIMITS } = await import('../../engine/registry/inspect-limits.js');
  const layer = await layerTar({ 'etc/.wh.passwd': '', 'app/x': 'y' });
  t.same((await timedScan(e, layer, DEFAULT_INSPECT_LIMITS)).scan, { whiteouts: 1, examples: ['etc/.wh.passwd'], readable: true });
  t.same((await timedScan(e, Buffer.from('not a tar at all, just text'.repeat(40)), DEFAULT_INSPECT_LIMITS)).scan, { whiteouts: 0, examples: [], readable: false });
});
