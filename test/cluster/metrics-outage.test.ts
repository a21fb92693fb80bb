/**
 * The admin listener through a PostgreSQL outage (issue: /metrics answered 500 "the metadata
 * database is unavailable" for the whole outage, so monitoring went blind): /metrics and /healthz
 * answer 200 from memory within `BOUND_MS` while the database is stopped (fast shutdown and
 * crash), /metrics says so (`slipway_store_up 0`, the last totals kept), /readyz reports the
 * store as the cause, and everything is back once the database is.
 */
import t from 'tap';
import { waitFor } from '../helpers/harness.js';
import { postgresSkip } from '../helpers/postgres.js';
import { startOutageNode } from '../helpers/outage.js';
import { http } from '../helpers/http.js';
import { sampleSum } from '../helpers/metrics.js';

const skip = postgresSkip();
/** Longest /metrics or /healthz may take, whatever the database does (server/ops/metrics.ts SCRAPE_WAIT_MS is 1 s). */
const BOUND_MS = 2_500;
/** How long the test scrapes through each outage (ms): past the 2 s for which store totals are reused. */
const OUTAGE_SCRAPE_MS = 4_000;

t.test('/metrics and /healthz answer from memory through a database outage; /readyz names the cause', { skip }, async (t) => {
  const { db, node } = await startOutageNode(t, 'watched');
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
    t.pass(`${mode}: metrics and readiness back after the database returned`);
  }
});
