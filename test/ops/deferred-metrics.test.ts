/**
 * The deferred request metrics (server/ops/metrics.ts): series handles kept by the caller sum
 * observations in plain numbers, and a scrape exports exactly what prom-client's own `observe`
 * and `inc` would have (buckets cumulated, sums, counts, counter totals across scrapes).
 */
import t from 'tap';
import { Counter, Histogram, Registry } from 'prom-client';
import { DeferredCounter, DeferredHistogram, statusClass } from '../../server/ops/metrics.js';

const BOUNDS = [0.001, 0.01, 0.1];

t.test('a histogram series exports the same text as prom-client observing directly', async (t) => {
  const deferredRegistry = new Registry();
  const directRegistry = new Registry();
  const deferred: DeferredHistogram<'route'> = new DeferredHistogram(new Histogram({
    name: 'h', help: 'h', labelNames: ['route'] as const, buckets: BOUNDS, registers: [deferredRegistry],
    collect: (): void => deferred.flush(),
  }), BOUNDS);
  const direct = new Histogram({ name: 'h', help: 'h', labelNames: ['route'] as const, buckets: BOUNDS, registers: [directRegistry] });
  const a = deferred.series('a', { route: 'a' });
  const b = deferred.series('b', { route: 'b' });
  t.equal(deferred.series('a', { route: 'a' }), a, 'the same key gives the same series');
  const values = [0.0005, 0.002, 0.05, 0.5, 0.001, 0.01];
  for (const [i, v] of values.entries()) {
    deferred.observeSeries(i % 2 ? b : a, v);
    direct.observe({ route: i % 2 ? 'b' : 'a' }, v);
  }
  t.equal(await deferredRegistry.metrics(), await directRegistry.metrics());
  deferred.observeSeries(a, 0.003);
  direct.observe({ route: 'a' }, 0.003);
  t.equal(await deferredRegistry.metrics(), await directRegistry.metrics(), 'and again after a second scrape');
});

t.test('counter series add up across scrapes', async (t) => {
  const registry = new Registry();
  const counter: DeferredCounter<'host'> = new DeferredCounter(new Counter({
    name: 'c_total', help: 'c', labelNames: ['host'] as const, registers: [registry], collect: (): void => counter.flush(),
  }));
  const s = counter.series('registry', { host: 'registry' });
  counter.series('idle', { host: 'idle' });
  s.n += 5;
  t.match(await registry.metrics(), /c_total\{host="registry"\} 5/);
  t.notMatch(await registry.metrics(), /idle/, 'a series never added to is not exported');
  s.n += 2;
  t.match(await registry.metrics(), /c_total\{host="registry"\} 7/);
});

t.test('status classes', async (t) => {
  t.equal(statusClass(0), 'aborted');
  t.equal(statusClass(200), '2xx');
  t.equal(statusClass(404), '4xx');
  t.equal(statusClass(503), '5xx');
  t.equal(statusClass(1000), '10xx');
});
