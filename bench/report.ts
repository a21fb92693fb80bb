/**
 * Output: one JSON line per figure per server on stdout, then one JSON line per compared
 * figure with the ratio, which direction is better, and the target. A plain-text table goes to
 * stderr at the end.
 */

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
interface Target {
  ratio?: number;
  max?: number;
}

const LOWER_UNITS = new Set(['ms', 's/GiB', 'MiB']);

/** Targets from the brief, by figure name. */
const TARGETS: Record<string, Target> = {
  push_1gib_single_patch: { ratio: 3 },
  push_1gib_chunked_16mib: { ratio: 3 },
  push_concurrent: { ratio: 2.5 },
  manifest_get_64c_rps: { ratio: 15 },
  manifest_get_64c_p99: { max: 10 },
  manifest_get_64c_raw_rps: { ratio: 15 },
  manifest_get_64c_raw_p99: { max: 10 },
  blob_head_64c_rps: { ratio: 15 },
  blob_head_64c_p99: { max: 10 },
  warm_push_p50: { max: 3 },
  server_cpu_per_gib_push: { max: 1.0 },
  server_peak_rss_push_1gib: { max: 120 },
};

/** Collects figures and prints them. */
export class Report {
  readonly figures: Figure[] = [];

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
    const names = [...new Set(this.figures.map((f) => f.bench))];
    for (const bench of names) {
      const s = this.figures.find((f) => f.bench === bench && f.server === 'slipway');
      const r = this.figures.find((f) => f.bench === bench && f.server === 'reference');
      const unit = (s ?? r)!.unit;
      const better: Better = LOWER_UNITS.has(unit) ? 'lower' : 'higher';
      const line: Record<string, unknown> = { bench, unit, slipway: s?.value ?? null, reference: r?.value ?? null };
      if (s && r && s.value > 0 && r.value > 0) {
        line.ratio = Math.round((better === 'higher' ? s.value / r.value : r.value / s.value) * 100) / 100;
        line.better = better === 'higher' ? 'higher value; ratio = slipway/reference' : 'lower value; ratio = reference/slipway';
      } else {
        line.ratio = null;
        line.better = better === 'higher' ? 'higher value' : 'lower value';
      }
      const t = TARGETS[bench];
      if (t?.ratio !== undefined) {
        line.target = `ratio >= ${t.ratio}`;
        line.met = typeof line.ratio === 'number' ? line.ratio >= t.ratio : null;
      } else if (t?.max !== undefined) {
        line.target = `slipway <= ${t.max} ${unit}`;
        line.met = s ? s.value <= t.max : null;
      }
      process.stdout.write(JSON.stringify(line) + '\n');
      out.push(line);
    }
    return out;
  }

  /** Writes a human-readable table of the comparison to stderr. */
  table(rows: Array<Record<string, unknown>>): void {
    const cols = ['bench', 'unit', 'slipway', 'reference', 'ratio', 'target', 'met'];
    const cells = rows.map((r) => cols.map((c) => (r[c] === undefined || r[c] === null ? '-' : String(r[c]))));
    const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
    const fmt = (row: string[]) => row.map((v, i) => v.padEnd(widths[i]!)).join('  ');
    process.stderr.write('\n' + fmt(cols) + '\n' + fmt(widths.map((w) => '-'.repeat(w))) + '\n');
    for (const row of cells) process.stderr.write(fmt(row) + '\n');
  }
}
