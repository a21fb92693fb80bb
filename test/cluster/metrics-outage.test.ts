/**
 * The admin listener through a PostgreSQL outage (issue: /metrics answered 500 "the metadata
 * database is unavailable" for the whole outage, so monitoring went blind): /metrics and /healthz
 * answer 200 from memory within `BOUND_MS` while the database is stopped (fast shutdown and
 * crash), /metrics says so (`slipway_store_up 0`, the last totals kept), /readyz reports the
 * store as the cause, and everything is back once the database is. The read cache's metrics:
 * hits, the read barrier's waits and round trips, the misses and the statements that carried
 * them, entries and bytes, and `slipway_database_cache_usable` 0 while its listener is lost, 1
 * again after.
 */
import t from 'tap';
import { waitFor } from '../helpers/harness.js';
import { postgresSkip } from '../helpers/postgres.js';
import { startOutageNode } from '../helpers/outage.js';
import { http } from '../helpers/http.js';
import { promtoolCheck, sampleSum, scrape } from '../helpers/metrics.js';

const skip = postgresSkip();
/** Longest /metrics or /healthz may take, whatever the database does (server/ops/metrics.ts SCRAPE_WAIT_MS is 1 s). */
const BOUND_MS = 2_500;
/** How long the test scrapes through each outage (ms): past the 2 s for which store totals are reused. */
const OUTAGE_SCRAPE_MS = 4_000;

t.test('/metrics and /healthz answer from memory through a database outage; /readyz names the cause', { skip }, async (t) => {
  const { db, node, registry } = await startOutageNode(t, 'watched');
  const admin = node.urls.admin;
  const metrics = async () => {
    const t0 = performance.now();
    const r = await http('GET', `${admin}/metrics`);
    return { r, ms: performance.now() - t0 };
  };
  const before = await waitFor('the store totals to show the pushed manifest', async () => {
    const { r } = await metrics();
    return r.status === 200 && sampleSum(r.text, 'slipway_store_manifests') >= 1 && r.text;
  }, { timeoutMs: 20_000, intervalMs: 100 });
  t.equal(sampleSum(before, 'slipway_store_up'), 1, 'slipway_store_up 1 before the outage');

  // The read cache: a manifest read twice by tag is a miss and then a hit, each after the read
  // barrier's round trip (engine/storage/postgres-invalidation.ts).
  const cacheBefore = await scrape(admin);
  t.equal(sampleSum(cacheBefore, 'slipway_database_cache_usable'), 1, 'slipway_database_cache_usable 1 with the listener confirmed');
  for (let i = 0; i < 2; i++) {
    const g = await http('GET', `${registry.registry}/v2/watched/web/manifests/v1`, { headers: { ...registry.auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    t.equal(g.status, 200, `manifest GET ${i + 1}`);
  }
  const cacheAfter = await scrape(admin);
  const grew = (name: string, ...labels: string[]) => sampleSum(cacheAfter, name, ...labels) - sampleSum(cacheBefore, name, ...labels);
  t.ok(grew('slipway_database_cache_hits_total') >= 1, `the second GET was answered from the cache (+${grew('slipway_database_cache_hits_total')} hits)`);
  t.ok(grew('slipway_database_read_barrier_seconds_count', 'usable="1"') >= 2, 'each GET waited for a read barrier, counted');
  t.ok(sampleSum(cacheAfter, 'slipway_database_cache_entries') > 0 && sampleSum(cacheAfter, 'slipway_database_cache_bytes') > 0, 'entries and bytes shown');
  t.ok(grew('slipway_database_miss_reads_total') >= 1 && grew('slipway_database_miss_statements_total') >= 1, `the first GET's miss went to the database, counted (+${grew('slipway_database_miss_reads_total')} reads in +${grew('slipway_database_miss_statements_total')} statements)`);
  t.ok(sampleSum(cacheAfter, 'slipway_database_miss_statements_total') <= sampleSum(cacheAfter, 'slipway_database_miss_reads_total'), 'never more statements than the reads they carried');
  t.ok(grew('slipway_database_read_barrier_round_trips_total') >= 1, `the barriers' round trips counted (+${grew('slipway_database_read_barrier_round_trips_total')})`);
  const check = await promtoolCheck(cacheAfter);
  t.equal(check.code, 0, `promtool check metrics: ${check.output.trim() || 'clean'}`);

  for (const mode of ['fast', 'immediate'] as const) {
    await db.halt(mode);
    const haltedAt = performance.now();
    const scrapes: Array<{ status: number; ms: number }> = [];
    // Scrape, every answer timed, until the metrics show the outage and for longer than the
    // store totals are ever reused (2 s), so every scrape after that has had to do without the store.
    let down = '';
    await waitFor(`/metrics to show the outage, for ${OUTAGE_SCRAPE_MS} ms (${mode})`, async () => {
      const { r, ms } = await metrics();
      scrapes.push({ status: r.status, ms });
      if (r.status === 200 && sampleSum(r.text, 'slipway_store_up') === 0) down = r.text;
      return down !== '' && performance.now() - haltedAt > OUTAGE_SCRAPE_MS;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    for (let i = 0; i < 5; i++) {
      const { r, ms } = await metrics();
      scrapes.push({ status: r.status, ms });
    }
    t.same([...new Set(scrapes.map((s) => s.status))], [200], `${mode}: every scrape during the outage answered 200 (${scrapes.length} scrapes)`);
    const slowest = Math.round(Math.max(...scrapes.map((s) => s.ms)));
    t.ok(slowest < BOUND_MS, `${mode}: slowest scrape ${slowest} ms (bound ${BOUND_MS} ms)`);
    t.equal(sampleSum(down, 'slipway_store_manifests'), sampleSum(before, 'slipway_store_manifests'), `${mode}: the last store totals are kept`);
    t.ok(sampleSum(down, 'slipway_http_requests_in_flight') >= 0 && /slipway_http_request_duration_seconds_count/.test(down), `${mode}: the request metrics are there`);
    t.match(down, /^slipway_database_cache_usable 0$/m, `${mode}: the read cache shown unused (its listener lost)`);
    const health = await http('GET', `${admin}/healthz`);
    t.equal(health.status, 200, `${mode}: /healthz 200`);
    const ready = await waitFor(`/readyz to report the store (${mode})`, async () => {
      const r = await http('GET', `${admin}/readyz`);
      return r.status === 503 && r;
    }, { timeoutMs: 10_000, intervalMs: 50 });
    t.ok(ready.json?.checks?.store && ready.json.checks.store !== 'ok', `${mode}: /readyz names the store: ${ready.json?.checks?.store}`);
    t.comment(`${mode}: ${scrapes.length} scrapes during the outage, slowest ${slowest} ms`);

    await db.resume();
    await waitFor(`/metrics to show the store back (${mode})`, async () => {
      const { r } = await metrics();
      return r.status === 200 && sampleSum(r.text, 'slipway_store_up') === 1;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    await waitFor(`readiness back (${mode})`, async () => (await http('GET', `${admin}/readyz`)).status === 200, { timeoutMs: 30_000, intervalMs: 100 });
    await waitFor(`the read cache in use again (${mode})`, async () => sampleSum(await scrape(admin), 'slipway_database_cache_usable') === 1, { timeoutMs: 30_000, intervalMs: 100 });
    t.pass(`${mode}: metrics and readiness back after the database returned`);
  }
});
