/** The growth benchmark's summary table on stderr (bench/growth/run.ts): one row per size step and server, then GC. */
import type { BarrierFigures, GcFigures } from './barrier.js';
import type { MemoryReading } from './memory.js';
import { formatShare, type ProcessCpu } from '../process-share.js';

/** The figures of one size step on one server (also printed as a JSON line). */
export interface StepRow extends MemoryReading {
  bench: 'growth';
  server: string;
  backend: string;
  images: number;
  pushes_since_start: number;
  push_images_per_s: number;
  manifest_get_p50_ms: number;
  manifest_get_p99_ms: number;
  manifest_get_rps: number;
  /** Manifest GETs of images not read since the server started (reads.ts `firstReads`), ms. */
  first_get_p50_ms: number;
  first_get_p99_ms: number;
  /** Their rate, GETs per second (with `first_others`, the other processes' CPU per GET). */
  first_get_rps: number;
  /** Manifest GETs repeating reads of a hot set of images (reads.ts `hotSetGets`), ms. */
  hot_get_p50_ms: number;
  hot_get_p99_ms: number;
  hot_get_rps: number;
  /** On PostgreSQL, the read barrier and the cache during the first reads and the hot-set GETs (barrier.ts); null elsewhere. */
  first_barrier: BarrierFigures | null;
  hot_barrier: BarrierFigures | null;
  /**
   * Slipway: the longest its event loop was held during the first reads, the random-image GETs
   * and the hot-set GETs, ms (barrier.ts `NodeReading`: the delay histogram's maximum less its
   * 10 ms timer interval); null for the reference.
   */
  first_loop_max_ms: number | null;
  get_loop_max_ms: number | null;
  hot_loop_max_ms: number | null;
  /** Slipway: its main thread's garbage collections during the same three runs (barrier.ts `gcBetween`); null for the reference. */
  first_gc: GcFigures | null;
  get_gc: GcFigures | null;
  hot_gc: GcFigures | null;
  /** The other processes' busiest groups during the first reads and the hot-set GETs (bench/process-share.ts). */
  first_others: ProcessCpu[];
  hot_others: ProcessCpu[];
  tag_list_1000_ms: number;
  /** The first full tag list of the step (before the warm-up runs: reads.ts `timedRuns`). */
  tag_list_1000_first_ms: number;
  catalog_page_ms: number;
  tag_page_ms: number;
  /** Tags the `?n=100` page answered (the reference answers all of them). */
  tag_page_entries: number;
  startup_ms: number | null;
  rss_after_restart_mib: number | null;
  data_mib: number | null;
  load1: number;
  push_other_cpu_pct: number;
  push_steal_cpu_pct: number;
  push_server_cpu_pct: number;
  read_other_cpu_pct: number;
  read_steal_cpu_pct: number;
  /**
   * Over the first reads: the server's minor page faults and CPU µs per GET (on LMDB, a fault is a
   * page of the map this process had not touched since it mapped it, 15–40 µs in this VM).
   */
  first_minor_faults_per_request: number;
  first_server_cpu_us_per_request: number;
  /** Over the manifest GETs (warm-up and timed): the server's minor page faults and CPU µs per GET. */
  get_minor_faults_per_request: number;
  get_server_cpu_us_per_request: number;
  /**
   * The server's major page faults (a page read from the disk: on LMDB, a page of the map that
   * had left the page cache) during the first reads, the manifest GETs and the hot set.
   */
  major_faults_first: number;
  major_faults_get: number;
  major_faults_hot: number;
  /**
   * The main thread's old generation in use (MiB) before the first reads, after them, after the
   * manifest GETs and after the hot set: what the reads leave there (a major collection in between
   * lowers it).
   */
  old_used_mib: Array<number | null>;
}

/** A run's read-barrier figures as one cell: mean wait ms / barriers over 5 ms / cache hit %. */
const barrierCell = (b: BarrierFigures | null): string | null => (b ? `${b.barrier_mean_ms}/${b.barrier_over_5ms}/${b.cache_hit_pct}` : null);

/** A run's collections as one cell: over 1 ms / all / total ms / major. */
const gcCell = (g: GcFigures | null): string => (g ? `${g.gc_over_1ms}/${g.gc_count}/${g.gc_ms}/${g.gc_major}` : '-');

const COLUMNS: Array<[string, (r: StepRow) => unknown]> = [
  ['server', (r) => r.server], ['images', (r) => r.images], ['push/s', (r) => r.push_images_per_s],
  ['get p50', (r) => r.manifest_get_p50_ms], ['get p99', (r) => r.manifest_get_p99_ms],
  ['first get p50/p99', (r) => `${r.first_get_p50_ms}/${r.first_get_p99_ms}`], ['hot get p50/p99', (r) => `${r.hot_get_p50_ms}/${r.hot_get_p99_ms}`],
  ['barrier ms/>5ms/hit% first', (r) => barrierCell(r.first_barrier)], ['hot', (r) => barrierCell(r.hot_barrier)],
  ['loop max ms first/get/hot', (r) => (r.first_loop_max_ms === null ? null : `${r.first_loop_max_ms}/${r.get_loop_max_ms}/${r.hot_loop_max_ms}`)],
  ['GCs >1ms/all/ms/major first|get|hot', (r) => (r.first_loop_max_ms === null ? null : [r.first_gc, r.get_gc, r.hot_gc].map(gcCell).join(' | '))],
  ['first faults/cpu µs', (r) => `${r.first_minor_faults_per_request}/${r.first_server_cpu_us_per_request}`],
  ['get faults/cpu µs', (r) => `${r.get_minor_faults_per_request}/${r.get_server_cpu_us_per_request}`],
  ['major faults first/get/hot', (r) => `${r.major_faults_first}/${r.major_faults_get}/${r.major_faults_hot}`],
  ['old used MiB before/first/get/hot', (r) => r.old_used_mib.map((v) => v ?? '-').join('/')],
  ['tags 1000', (r) => r.tag_list_1000_ms], ['first', (r) => r.tag_list_1000_first_ms], ['catalog n=100', (r) => r.catalog_page_ms], ['tags n=100', (r) => (r.tag_page_entries === 100 ? r.tag_page_ms : `${r.tag_page_ms} (${r.tag_page_entries})`)],
  ['start ms', (r) => r.startup_ms], ['RSS', (r) => r.rss_mib], ['anon', (r) => r.rss_anon_mib], ['file', (r) => r.rss_file_mib],
  ['anon v8/malloc/other', (r) => `${r.anon_v8_pages_mib}/${r.anon_malloc_mib}/${r.anon_other_mib}`],
  ['heap', (r) => r.heap_used_mib], ['young/old committed', (r) => (r.young_committed_mib === null ? null : `${r.young_committed_mib}/${r.old_committed_mib}`)], ['external', (r) => r.external_mib], ['arrayBuf', (r) => r.array_buffers_mib],
  ['RSS restarted', (r) => r.rss_after_restart_mib], ['data MiB', (r) => r.data_mib],
  ['load1', (r) => r.load1], ['other% push/read', (r) => `${r.push_other_cpu_pct}/${r.read_other_cpu_pct}`], ['steal% push/read', (r) => `${r.push_steal_cpu_pct}/${r.read_steal_cpu_pct}`],
];

/**
 * `rows` as a plain-text table, one line each: a header of the column titles, a rule, then each
 * row's cells (`-` for null or undefined), every column padded to its widest cell.
 */
export function formatTable<R>(columns: Array<[string, (r: R) => unknown]>, rows: R[]): string {
  const cells = rows.map((r) => columns.map(([, f]) => { const v = f(r); return v === null || v === undefined ? '-' : String(v); }));
  const widths = columns.map(([t], i) => Math.max(t.length, ...cells.map((c) => c[i]!.length)));
  const fmt = (row: string[]) => row.map((v, i) => v.padEnd(widths[i]!)).join('  ');
  return [fmt(columns.map(([t]) => t)), fmt(widths.map((w) => '-'.repeat(w))), ...cells.map(fmt)].join('\n') + '\n';
}

/** Prints the step rows (latencies in ms, memory in MiB) and the GC rows. */
export function printTable(rows: StepRow[], gcRows: Array<Record<string, unknown>>): void {
  process.stderr.write('\n' + formatTable(COLUMNS, rows));
  for (const r of rows) {
    process.stderr.write(`other processes, ${r.server} at ${r.images} images: first reads ${formatShare(r.first_others)}; hot set ${formatShare(r.hot_others)} (% of one core)\n`);
  }
  process.stderr.write('latencies ms after warm-up runs (tags 1000: full list of a 1,000-tag repository, first: the step\'s first one, before the warm-up; n=100: one page), memory MiB at the end of the step before the restart; other%: CPU % of one core used by other processes; steal%: the hypervisor\'s\n');
  for (const g of gcRows) {
    process.stderr.write(`gc ${g.server}: ${g.deleted_images} of ${g.images} images deleted in ${g.delete_ms} ms; gc ${g.gc_wall_ms} ms wall, ${g.gc_blobs_freed} blobs and ${g.gc_kib_freed} KiB freed; ${g.images_verified} images checked (load ${g.load1}; whole machine busy ${g.busy_cpu_pct} % of one core incl. both servers and gc, steal ${g.steal_cpu_pct} %)\n`);
  }
}
