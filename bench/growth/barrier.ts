/**
 * What a Slipway node on PostgreSQL spent waiting for its read barrier during one timed run of
 * reads: the difference of two readings of its admin `/metrics` (server/ops/metrics.ts
 * `watchReadCache`). A cached read answers from the node's memory, but only after one round trip
 * through the database per request (engine/storage/postgres-invalidation.ts), so a database busy
 * with the pushes' aftermath slows repeat reads too; these figures tell that wait apart from the
 * statements of first reads.
 */
import { request } from 'undici';
import { metricSample } from './memory.js';

/** Cumulative figures at one moment; null on a server without a read cache (LMDB, the reference). */
export interface BarrierReading {
  /** Barriers waited for while the cache was usable, their total wait (seconds), and those over 5 ms. */
  count: number;
  sumSeconds: number;
  over5ms: number;
  hits: number;
  misses: number;
}

/** A run's figures: mean barrier wait (ms), barriers over 5 ms, and cache hits among cached-keyspace reads (%). */
export interface BarrierFigures {
  barrier_mean_ms: number;
  barrier_over_5ms: number;
  cache_hit_pct: number;
}

/**
 * Interval of the timer behind prom-client's event-loop delay histogram (its default
 * `eventLoopMonitoringPrecision`), ms. The histogram records the time between two runs of that
 * timer, so its maximum is this interval plus the longest the timer ran late.
 */
const LOOP_TIMER_MS = 10;

/**
 * One reading of a node's admin `/metrics` around a timed run of reads: its read barrier's
 * counters (null without a read cache), and the longest the event loop held its 10 ms timer late
 * since the scrape before (prom-client's `nodejs_eventloop_lag_max_seconds`, whose histogram
 * restarts at every scrape, less `LOOP_TIMER_MS`), in ms: read after a run, the longest the
 * node's event loop was held during it (a garbage collection, a synchronous store read, a
 * background pass). Measured 2026-12-06 with a bare Node 24 process on this machine: an idle
 * loop reads 2–9 ms, a 30 ms busy loop 29–30 ms, a 5 ms one 6–9 ms.
 */
export interface NodeReading {
  barrier: BarrierReading | null;
  loopMaxMs: number | null;
  /** The main thread's garbage collections so far (null before the first one is recorded). */
  gc: GcReading | null;
  /** Bytes in use in the main thread's old generation (prom-client's `nodejs_heap_space_size_used_bytes{space="old"}`), MiB; null when absent. */
  oldUsedMiB: number | null;
}

/**
 * Cumulative garbage collections of a node's main thread, from prom-client's
 * `nodejs_gc_duration_seconds` histogram (every kind summed; its buckets start at 1 ms). prom-client
 * records the first entry of each batch its PerformanceObserver is given, so these are a lower
 * bound when collections come in quick succession.
 */
export interface GcReading {
  count: number;
  sumSeconds: number;
  /** Collections that took over 1 ms (the histogram's first bucket). */
  over1ms: number;
  /** Major (mark-compact) collections among them. */
  major: number;
}

/** A run's collections: how many, their total ms, those over 1 ms, and the major ones. */
export interface GcFigures {
  gc_count: number;
  gc_ms: number;
  gc_over_1ms: number;
  gc_major: number;
}

/** Kinds prom-client labels its garbage-collection histogram with. */
const GC_KINDS = ['major', 'minor', 'incremental', 'weakcb'];

/** Scrapes `admin`/metrics once (see NodeReading); null without an admin listener (the reference). */
export async function readNode(admin: string | undefined): Promise<NodeReading | null> {
  if (!admin) return null;
  const text = await (await request(`${admin}/metrics`)).body.text();
  const lag = metricSample(text, 'nodejs_eventloop_lag_max_seconds');
  const old = metricSample(text, 'nodejs_heap_space_size_used_bytes', '{space="old"}');
  return { barrier: barrierOf(text), loopMaxMs: lag === null ? null : Math.max(0, Math.round((lag * 1e3 - LOOP_TIMER_MS) * 10) / 10), gc: gcOf(text), oldUsedMiB: old === null ? null : Math.round((old / 1048576) * 10) / 10 };
}

/** The garbage-collection counters in a `/metrics` text; null before any collection was recorded. */
function gcOf(text: string): GcReading | null {
  const name = 'nodejs_gc_duration_seconds';
  const sample = (suffix: string, kind: string, le = '') => metricSample(text, `${name}${suffix}`, `{${le ? `le="${le}",` : ''}kind="${kind}"}`) ?? 0;
  let count = 0, sumSeconds = 0, over1ms = 0, major = 0, seen = false;
  for (const kind of GC_KINDS) {
    const n = metricSample(text, `${name}_count`, `{kind="${kind}"}`);
    if (n === null) continue;
    seen = true;
    count += n;
    sumSeconds += sample('_sum', kind);
    over1ms += n - sample('_bucket', kind, '0.001');
    if (kind === 'major') major += n;
  }
  return seen ? { count, sumSeconds, over1ms, major } : null;
}

/** The collections between two readings (null when the later one has none recorded). */
export function gcBetween(a: GcReading | null | undefined, b: GcReading | null | undefined): GcFigures | null {
  if (!b) return null;
  const from = a ?? { count: 0, sumSeconds: 0, over1ms: 0, major: 0 };
  return { gc_count: b.count - from.count, gc_ms: Math.round((b.sumSeconds - from.sumSeconds) * 1e4) / 10, gc_over_1ms: b.over1ms - from.over1ms, gc_major: b.major - from.major };
}

/** The barrier and cache counters in a `/metrics` text; null when the node has no read cache. */
function barrierOf(text: string): BarrierReading | null {
  const name = 'slipway_database_read_barrier_seconds';
  const count = metricSample(text, `${name}_count`, '{usable="1"}');
  if (count === null) return null;
  const within5ms = metricSample(text, `${name}_bucket`, '{le="0.005",usable="1"}') ?? 0;
  return {
    count, sumSeconds: metricSample(text, `${name}_sum`, '{usable="1"}') ?? 0, over5ms: count - within5ms,
    hits: metricSample(text, 'slipway_database_cache_hits_total') ?? 0, misses: metricSample(text, 'slipway_database_cache_misses_total') ?? 0,
  };
}

/** The figures between two readings (null when either is). */
export function barrierBetween(a: BarrierReading | null, b: BarrierReading | null): BarrierFigures | null {
  if (!a || !b) return null;
  const n = b.count - a.count;
  const reads = b.hits - a.hits + (b.misses - a.misses);
  return {
    barrier_mean_ms: n > 0 ? Math.round(((b.sumSeconds - a.sumSeconds) / n) * 1e5) / 100 : 0,
    barrier_over_5ms: b.over5ms - a.over5ms,
    cache_hit_pct: reads > 0 ? Math.round(((b.hits - a.hits) / reads) * 100) : 0,
  };
}
