/**
 * Output: one JSON line per figure per server on stdout, then one JSON line per compared
 * figure with the ratio, which direction is better, and the target. A plain-text table goes to
 * stderr at the end.
 */
import { threadCells, type ThreadRow } from './procstat.js';

/** One measured figure. */
export interface Figure {
  bench: string;
  server: 'slipway' | 'reference';
  value: number;
  unit: string;
  /** Extra context (sizes, counts, errors). */
  [extra: string]: unknown;
}

/** Direction in which a figure is better. */
type Better = 'higher' | 'lower';

/** A target: a minimum ratio against the reference, or an absolute bound on Slipway's value. */
export interface Target {
  ratio?: number;
  max?: number;
}

const LOWER_UNITS = new Set(['ms', 's/GiB', 'MiB', 'us/req']);

/**
 * Targets by figure name (issue 25): every pull at least 1.2 × the reference, pushes as before,
 * server CPU per GiB pushed at most half the reference's (a ratio of 2: CPU ratios are
 * reference/slipway), the raw read loads at least 12 ×.
 */
export const TARGETS: Readonly<Record<string, Target>> = {
  push_1gib_single_patch: { ratio: 3 },
  push_1gib_chunked_16mib: { ratio: 3 },
  push_concurrent: { ratio: 2.5 },
  pull_1gib: { ratio: 1.2 },
  pull_1gib_second: { ratio: 1.2 },
  pull_1gib_cached: { ratio: 1.2 },
  pull_concurrent: { ratio: 1.2 },
  server_cpu_per_gib_push: { ratio: 2 },
  server_cpu_per_gib_push_chunked: { ratio: 2 },
  manifest_get_64c_rps: { ratio: 12 },
  manifest_get_64c_p99: { max: 10 },
  manifest_get_64c_raw_rps: { ratio: 12 },
  manifest_get_64c_raw_p99: { max: 10 },
  blob_head_64c_rps: { ratio: 12 },
  blob_head_64c_p99: { max: 10 },
  warm_push_p50: { max: 3 },
  server_peak_rss_push_1gib: { max: 120 },
};

/** Row order of the comparison (figures not listed come last). */
const ORDER = [
  'push_1gib_single_patch', 'push_1gib_chunked_16mib', 'push_concurrent', 'push_concurrent_again', 'pull_1gib', 'pull_1gib_second', 'pull_1gib_cached', 'pull_concurrent',
  'server_cpu_per_gib_push', 'server_cpu_per_gib_push_chunked', 'server_peak_rss_push_1gib',
  'server_cpu_per_gib_pull', 'server_cpu_per_gib_pull_second', 'server_cpu_per_gib_pull_cached', 'server_cpu_per_gib_pull_concurrent',
  'manifest_get_64c_rps', 'manifest_get_64c_p50', 'manifest_get_64c_p99', 'manifest_get_64c_server_cpu',
  'manifest_get_64c_raw_rps', 'manifest_get_64c_raw_p50', 'manifest_get_64c_raw_p99', 'manifest_get_64c_raw_server_cpu',
  'blob_head_64c_rps', 'blob_head_64c_p50', 'blob_head_64c_p99', 'blob_head_64c_server_cpu',
  'manifest_put_p50', 'manifest_put_p99', 'warm_push_p50', 'warm_push_p99',
];

/** Collects figures and prints them. */
export class Report {
  readonly figures: Figure[] = [];
  /** Failed workloads: `<server>:<workload>` → message. */
  readonly failures = new Map<string, string>();
  readonly #targets: Record<string, Target> = TARGETS;
  /** The machine's limit of a figure measured in this run: figure → [limit in its unit, what it is]. */
  readonly #limits = new Map<string, [number, string]>();

  /** Sets the machine's limit for `bench` (same unit), printed beside Slipway's value as a fraction. */
  limit(bench: string, value: number, what: string): void {
    this.#limits.set(bench, [value, what]);
  }

  /** Records and prints a failed workload. */
  fail(workload: string, server: 'slipway' | 'reference', message: string): void {
    this.failures.set(`${server}:${workload}`, message);
    this.note({ bench: workload, server, error: message });
  }

  /** Whether `bench` belongs to a workload that failed on `server`. */
  #failed(bench: string, server: string): boolean {
    for (const key of this.failures.keys()) {
      const [s, w] = key.split(':') as [string, string];
      if (s !== server) continue;
      if (bench === w || ['_rps', '_p50', '_p99', '_server_cpu'].some((x) => bench === w + x)) return true;
      if (w === 'push_1gib_single_patch' && bench.startsWith('server_')) return true;
    }
    return false;
  }

  /** Prints a figure as a JSON line and keeps it for the comparison. */
  add(f: Figure): void {
    this.figures.push(f);
    process.stdout.write(JSON.stringify(f) + '\n');
  }

  /** Prints a non-figure JSON line (environment, notes). */
  note(obj: Record<string, unknown>): void {
    process.stdout.write(JSON.stringify(obj) + '\n');
  }

  /** Prints one comparison line per figure and returns them. */
  compare(): Array<Record<string, unknown>> {
    const out: Array<Record<string, unknown>> = [];
    const rank = (b: string) => (ORDER.includes(b) ? ORDER.indexOf(b) : ORDER.length);
    const names = [...new Set(this.figures.map((f) => f.bench))].sort((a, b) => rank(a) - rank(b));
    for (const bench of names) {
      const s = this.figures.find((f) => f.bench === bench && f.server === 'slipway');
      const r = this.figures.find((f) => f.bench === bench && f.server === 'reference');
      const unit = (s ?? r)!.unit;
      const better: Better = LOWER_UNITS.has(unit) ? 'lower' : 'higher';
      const value = (f: Figure | undefined, server: string) => f?.value ?? (this.#failed(bench, server) ? 'FAILED' : null);
      const line: Record<string, unknown> = { bench, unit, slipway: value(s, 'slipway'), reference: value(r, 'reference') };
      // CPU used by other processes on the machine while each side was measured (contention).
      if (typeof s?.other_cpu_pct === 'number') line.other_cpu_pct_slipway = s.other_cpu_pct;
      if (typeof r?.other_cpu_pct === 'number') line.other_cpu_pct_reference = r.other_cpu_pct;
      // CPU time the hypervisor gave to other guests meanwhile (steal).
      if (typeof s?.steal_cpu_pct === 'number') line.steal_cpu_pct_slipway = s.steal_cpu_pct;
      if (typeof r?.steal_cpu_pct === 'number') line.steal_cpu_pct_reference = r.steal_cpu_pct;
      // The target is judged on the exact ratio: the printed one is rounded (2.496 shows as 2.5).
      let exactRatio: number | null = null;
      if (s && r && s.value > 0 && r.value > 0) {
        exactRatio = better === 'higher' ? s.value / r.value : r.value / s.value;
        line.ratio = Math.round(exactRatio * 100) / 100;
        line.better = better === 'higher' ? 'higher value; ratio = slipway/reference' : 'lower value; ratio = reference/slipway';
      } else {
        line.ratio = null;
        line.better = better === 'higher' ? 'higher value' : 'lower value';
      }
      const lim = this.#limits.get(bench);
      if (lim) {
        line.limit = lim[0];
        line.limit_is = lim[1];
        if (typeof s?.value === 'number') line.slipway_of_limit = Math.round((s.value / lim[0]) * 100) / 100;
        if (typeof r?.value === 'number') line.reference_of_limit = Math.round((r.value / lim[0]) * 100) / 100;
      }
      const t = this.#targets[bench];
      if (t?.ratio !== undefined) {
        line.target = `ratio >= ${t.ratio}`;
        line.met = exactRatio === null ? null : exactRatio >= t.ratio;
      } else if (t?.max !== undefined) {
        line.target = `slipway <= ${t.max} ${unit}`;
        line.met = s ? s.value <= t.max : null;
      }
      process.stdout.write(JSON.stringify(line) + '\n');
      out.push(line);
    }
    return out;
  }

  /**
   * Writes the per-thread CPU of every figure that carries `threads` (the push CPU figures) to
   * stderr, one line each: `main`, each event-loop thread, and the `futex`-parked threads
   * (libuv's file I/O pool, V8's helpers) summed, as user+system seconds.
   */
  threadTable(): void {
    for (const f of this.figures) {
      const rows = (f as { threads?: ThreadRow[] }).threads;
      if (!Array.isArray(rows)) continue;
      process.stderr.write(`threads ${f.server} ${f.bench} (${f.value} ${f.unit}): ${threadCells(rows)}\n`);
    }
  }

  /**
   * Writes, for every transfer figure (MB/s) during which the guest reported free memory to the
   * hypervisor (procstat.ts `returnedToHostKib`), how much: page-cache pages a push writes into
   * such memory cost it a fault in the host each.
   */
  returnedTable(): void {
    for (const f of this.figures) {
      const mib = f.returned_to_host_mib;
      if (typeof mib === 'number' && mib > 0 && f.unit === 'MB/s') process.stderr.write(`returned to the hypervisor during ${f.server} ${f.bench} (${f.value} ${f.unit}): ${mib} MiB of free memory\n`);
    }
  }

  /** Writes a human-readable table of the comparison to stderr. */
  table(rows: Array<Record<string, unknown>>): void {
    const cols = ['bench', 'unit', 'slipway', 'reference', 'ratio', 'target', 'met', 'limit', 'slipway_of_limit', 'reference_of_limit', 'other_cpu_pct_slipway', 'other_cpu_pct_reference', 'steal_cpu_pct_slipway', 'steal_cpu_pct_reference'];
    const titles = ['bench', 'unit', 'slipway', 'reference', 'ratio', 'target', 'met', 'limit', 's/limit', 'r/limit', 'other%(s)', 'other%(r)', 'steal%(s)', 'steal%(r)'];
    const cells = rows.map((r) => cols.map((c) => (r[c] === undefined || r[c] === null ? '-' : String(r[c]))));
    const widths = cols.map((_, i) => Math.max(titles[i]!.length, ...cells.map((row) => row[i]!.length)));
    const fmt = (row: string[]) => row.map((v, i) => v.padEnd(widths[i]!)).join('  ');
    process.stderr.write('\n' + fmt(titles) + '\n' + fmt(widths.map((w) => '-'.repeat(w))) + '\n');
    for (const row of cells) process.stderr.write(fmt(row) + '\n');
    process.stderr.write('limit: the machine\'s limit for the figure measured in this run (see the limits above the table); s/limit, r/limit: each server\'s figure as a fraction of it.\n');
    process.stderr.write('load workloads (blob_head_64c, manifest_get_64c_raw: the raw client; manifest_get_64c: undici): the limit of req/s and p99 is the same client against a server that only answers; of server_cpu, that server\'s CPU per request.\n');
    process.stderr.write('other%(s|r): CPU % of one core used by other processes on this machine (incl. kernel writeback) while the figure was measured; steal%: CPU % of one core the hypervisor gave to other guests meanwhile.\n');
  }
}
