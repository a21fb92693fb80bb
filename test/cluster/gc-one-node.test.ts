/**
 * GC runs on one node at a time in cluster mode: two `slipway serve` nodes on one real
 * PostgreSQL, each scheduling GC every 20 ms (SLIPWAY_GC_INTERVAL), take the store's exclusive
 * lock `gc` (a PostgreSQL advisory lock) around every run. Each run's summary event is a log
 * line with its start (wall clock, both nodes on one machine) and duration: no two runs, on
 * either node, overlap in time, and both nodes get turns. (Checked to fail with the lock taken
 * out of the scheduler: runs of both nodes then overlap.)
 */
import t from 'tap';
import { startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { tempDir } from '../helpers/server.js';
import pg from 'pg';

const skip = postgresSkip();

interface Run { node: string; start: number; end: number }

/** The GC runs a node logged so far (`gc event` lines of the JSON log). */
function runsOf(name: string, node: SpawnedSlipway): Run[] {
  const runs: Run[] = [];
  for (const line of node.output().split('\n')) {
    if (!line.includes('"event":"gc"')) continue;
    const e = JSON.parse(line) as { startedAt: number; durationMs: number };
    runs.push({ node: name, start: e.startedAt, end: e.startedAt + e.durationMs });
  }
  return runs;
}

t.test('two nodes scheduling GC every 20 ms never run it at the same time', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const shared = tempDir();
  t.teardown(() => shared.cleanup());
  const env = { SLIPWAY_GC_INTERVAL: '0.02', SLIPWAY_GC_GRACE: '0', SLIPWAY_LOG_LEVEL: 'info', SLIPWAY_ACCESS_LOG_LEVEL: 'silent' };
  // One after the other: the first creates the shared server key in the data directory.
  // Generous start timeouts: spawned nodes start slowly while the whole suite runs beside them.
  const a = await startSpawned({ dataDir: shared.dir, databaseUrl: db.connectionString, env, startTimeoutMs: 120_000 });
  t.teardown(() => a.stop());
  // Referenced blob records for every run to page through, so that a run lasts long enough
  // (tens of ms) that unlocked runs of the two nodes would overlap.
  const c = new pg.Client({ connectionString: db.connectionString });
  await c.connect();
  await c.query(`INSERT INTO slipway_kv (keyspace, key, value)
    SELECT 'blobs', 'sha256:' || md5(i::text) || md5((-i)::text), jsonb_build_object('size', 1, 'createdAt', 0, 'refs', 1)
    FROM generate_series(1, 20000) AS i`);
  await c.end();
  const b = await startSpawned({ dataDir: shared.dir, databaseUrl: db.connectionString, env, startTimeoutMs: 120_000 });
  t.teardown(() => b.stop());

  const all = await waitFor('both nodes to have run GC, 40 runs in all', () => {
    const runs = [...runsOf('A', a), ...runsOf('B', b)];
    return runs.length >= 40 && runs.some((r) => r.node === 'A') && runs.some((r) => r.node === 'B') ? runs : false;
  }, { timeoutMs: 120_000, intervalMs: 100 });
  all.sort((x, y) => x.start - y.start);
  const overlaps: string[] = [];
  for (let i = 1; i < all.length; i++) {
    // startedAt is whole milliseconds: allow one of rounding.
    if (all[i]!.start + 1 < all[i - 1]!.end) overlaps.push(`${all[i - 1]!.node} ${all[i - 1]!.start}–${all[i - 1]!.end} and ${all[i]!.node} ${all[i]!.start}`);
  }
  t.same(overlaps, [], 'no two GC runs overlap');
  t.comment(`GC runs: ${all.filter((r) => r.node === 'A').length} on A, ${all.filter((r) => r.node === 'B').length} on B`);
});
