/**
 * The cluster's GC grace changed at run time, on real PostgreSQL with two nodes: node A was
 * started with SLIPWAY_GC_GRACE=0, node B with six hours, so GC keeps a blob uploaded through B
 * for six hours (the longest announced; `slipway gc --dry-run` says so, and until when). The
 * operator runs `slipway gc grace set 0`: both nodes apply it without a restart (their
 * announcements in `slipway gc grace`), GC keeps the six hours while the change is in
 * transition (the old five-minute touch interval), and deletes the blob once it is over, on the
 * same running nodes. In-process nodes on a ManualClock started at the wall clock's now, so the
 * CLI (wall clock) and the nodes agree until the test moves the nodes' time past the transition.
 * (On old main `gc grace` is an unknown command and only restarting B with a shorter grace, and
 * waiting a day, would let the blob go.)
 */
import t from 'tap';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { startInProcess, waitFor, type InProcessSlipway } from '../helpers/harness.js';
import { ManualClock } from '../../engine/clock.js';
import { basic, createApp, http } from '../helpers/http.js';
import { pushBlob } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';
import { runCli, tempDir } from '../helpers/server.js';

const skip = postgresSkip();
const HOUR = 3600_000;

t.test('gc grace set reaches both nodes and GC without a restart', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const shared = tempDir();
  t.teardown(() => shared.cleanup());
  const clock = new ManualClock(Date.now());
  const node = async (name: string, grace: string) => {
    const n: InProcessSlipway = await startInProcess({
      dataDir: shared.dir, clock, metadata: () => PostgresMetadataStore.open({ connectionString: db.connectionString }),
      env: { SLIPWAY_NODE_NAME: name, SLIPWAY_GC_GRACE: grace, SLIPWAY_GC_INTERVAL: '0' },
    });
    t.teardown(() => n.stop());
    return n;
  };
  const a = await node('node-a', '0');
  const b = await node('node-b', '21600');
  const key = a.operator.apiKey;
  t.equal((await createApp(b.urls.api, key, 'grace')).status, 201);
  const blob = Buffer.from('uploaded through B; no manifest names it');
  const digest = sha256(blob);
  t.equal((await pushBlob({ registry: b.urls.registry, auth: basic('_', key) }, 'grace/web', blob)).status, 201);

  const cli = async (...args: string[]) => {
    const r = await runCli([...args, '--data', shared.dir], { SLIPWAY_DATABASE_URL: db.connectionString, SLIPWAY_GC_GRACE: '0' });
    if (r.code !== 0) throw new Error(`slipway ${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
    return { ...r, json: () => JSON.parse(r.stdout.trim().split('\n').pop()!) };
  };

  const before = (await cli('gc', '--dry-run', '--json')).json();
  t.match(before.grace, { ms: 6 * HOUR, source: 'nodes' }, 'no setting: B\'s six hours');
  const kept = before.keptBlobs.find((k: { digest: string }) => k.digest === digest);
  t.match(kept, { reason: 'grace' });
  t.equal(kept.until - kept.since, 6 * HOUR, 'kept six hours after its upload');

  const set = await cli('gc', 'grace', 'set', '0');
  t.match(set.stdout, /set to 0 s \(was 6 h\): every node applies it within 10 s; GC keeps 6 h until/);
  const setting = (await cli('gc', 'grace', '--json')).json().grace.setting;
  const nodes = await waitFor('both nodes to apply the setting', async () => {
    const ns = (await cli('gc', 'grace', '--json')).json().nodes as Array<{ node: string; appliedMs: number; settingAt: number }>;
    return ns.filter((n) => n.appliedMs === 0 && n.settingAt === setting.setAt).length === 2 ? ns : undefined;
  }, { timeoutMs: 60_000, intervalMs: 500 });
  t.same(nodes.map((n) => n.node).sort(), ['node-a', 'node-b'], 'both running nodes apply the setting (no restart)');

  const run = async () => {
    const report = await a.server.collectGarbage();
    if (!report) throw new Error('node A did not get the GC lock');
    return report;
  };
  const during = await run();
  t.equal(during.graceMs, 6 * HOUR, 'in transition: GC still keeps six hours');
  t.same(during.deletedBlobs, []);
  clock.advance(setting.fullFrom - clock.now() + 1);
  const after = await run();
  t.equal(after.graceMs, 0, 'transition over: the setting alone');
  t.same(after.deletedBlobs.map((d) => d.digest), [digest], 'the blob goes, no node restarted');
  t.equal((await http('HEAD', `${b.urls.registry}/v2/grace/web/blobs/${digest}`, { headers: basic('_', key) })).status, 404);
});
