/**
 * One GC grace period across a cluster (engine/registry/gc-grace.ts): node A runs GC with
 * SLIPWAY_GC_GRACE=0, node B was started with six hours. A blob a client uploaded through B (no
 * manifest names it yet) survives A's GC runs for B's six hours, not A's zero; once B has stopped and
 * has not been heard from for a day, A's own grace applies again and the blob goes. Two
 * in-process nodes on one real PostgreSQL and one data directory (filesystem blob store), on one
 * manual clock. (Without the announced graces, A's first run deletes the blob: the last step
 * shows what A does on its own.)
 */
import t from 'tap';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { startInProcess, TEST_EPOCH, type InProcessSlipway } from '../helpers/harness.js';
import { ManualClock } from '../../engine/clock.js';
import { basic, createApp } from '../helpers/http.js';
import { pushBlob } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';
import { tempDir } from '../helpers/server.js';

const skip = postgresSkip();
const HOUR = 3600_000;

t.test('GC keeps the longest grace any live node announced', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const shared = tempDir();
  t.teardown(() => shared.cleanup());
  const clock = new ManualClock(TEST_EPOCH);
  const metadata = () => PostgresMetadataStore.open({ connectionString: db.connectionString });
  const node = async (name: string, grace: string) => {
    const n: InProcessSlipway = await startInProcess({
      dataDir: shared.dir, metadata, clock,
      env: { SLIPWAY_NODE_NAME: name, SLIPWAY_GC_GRACE: grace, SLIPWAY_GC_INTERVAL: '0' },
    });
    t.teardown(() => n.stop());
    return n;
  };
  const a = await node('node-a', '0');
  const b = await node('node-b', '21600');
  await createApp(b.urls.api, a.operator.apiKey, 'grace');
  const blob = Buffer.from('uploaded through B; its manifest comes later');
  const digest = sha256(blob);
  t.equal((await pushBlob({ registry: b.urls.registry, auth: basic('_', a.operator.apiKey) }, 'grace/web', blob)).status, 201);

  const deleted = async () => {
    const report = await a.server.collectGarbage();
    if (!report) throw new Error('node A did not get the GC lock');
    return report.deletedBlobs.map((d) => d.digest);
  };
  t.same(await deleted(), [], 'just uploaded: kept (B announced six hours)');
  clock.advance(5 * HOUR);
  t.same(await deleted(), [], 'five hours later: still kept');

  await b.stop();
  clock.advance(25 * HOUR);
  t.same(await deleted(), [digest], 'B not heard from for a day: A\'s own grace (0) applies, the blob goes');
});
