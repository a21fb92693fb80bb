/**
 * The webhook bench's output (bench/README.md "Webhooks"), in the bench report's shape: one JSON
 * line per figure (`{"bench","server":"slipway","value","unit",…context}`, each with the CPU of
 * other processes and steal while it was measured), then one line per comparison against a
 * baseline measured in the same run (`{"bench","unit","slipway","baseline","baseline_is","ratio",
 * "better","target","met",…}`), and a table of the comparisons on stderr.
 */
import { percentile } from '../stats.js';
import type { Figure } from '../report.js';

/** CPU use over a window in % of one CPU (bench/procstat.ts `CpuWindow.end()`). */
export interface CpuUse {
  client_cpu_pct: number;
  server_cpu_pct: number;
  other_cpu_pct: number;
  steal_cpu_pct: number;
}

/** One comparison: a figure against its baseline from the same run. */
export interface Comparison {
  bench: string;
  unit: string;
  slipway: number;
  baseline: number;
  baseline_is: string;
  /** >1 favours the figure (value/baseline for throughput, baseline/value for ms). */
  ratio: number;
  better: string;
  target?: string;
  met?: boolean;
  [extra: string]: unknown;
}

/** p-th percentile (nearest rank) of `ms`, 3 decimals; NaN when empty. */
export function pct(ms: number[], p: number): number {
  const v = percentile(Float64Array.from(ms), ms.length, p);
  return Math.round(v * 1000) / 1000;
}

/** Mean of the windows' CPU figures, rounded to whole percent. */
export function meanCpu(uses: CpuUse[]): CpuUse {
  const m = (k: keyof CpuUse) => Math.round(uses.reduce((n, u) => n + u[k], 0) / Math.max(1, uses.length));
  return { client_cpu_pct: m('client_cpu_pct'), server_cpu_pct: m('server_cpu_pct'), other_cpu_pct: m('other_cpu_pct'), steal_cpu_pct: m('steal_cpu_pct') };
}

/** Prints lines on stdout and keeps the comparisons for the table. */
export class WebhookReport {
  readonly figures: Figure[] = [];
  readonly comparisons: Comparison[] = [];

  /** Prints a figure (server `slipway`). */
  figure(bench: string, value: number, unit: string, context: Record<string, unknown>): void {
    const f: Figure = { bench, server: 'slipway', value, unit, ...context };
    this.figures.push(f);
    process.stdout.write(JSON.stringify(f) + '\n');
  }

  /** Prints a non-figure line (environment, delivery totals). */
  note(obj: Record<string, unknown>): void {
    process.stdout.write(JSON.stringify(obj) + '\n');
  }

  /**
   * Prints a comparison of `value` with `baseline` (same unit). For `ms` the ratio is
   * baseline/value, otherwise value/baseline, so above 1 always favours `value`.
   * `minRatio`: the target, met when the ratio reaches it; `ratio`: a ratio computed by the
   * caller (such as a median of per-round ratios) instead of baseline and value's.
   */
  compare(bench: string, unit: string, value: number, baseline: number, baselineIs: string, minRatio?: number, extra: Record<string, unknown> = {}, ratioOf?: number): Comparison {
    const lower = unit === 'ms' || unit.startsWith('ms/');
    const ratio = ratioOf ?? (value > 0 && baseline > 0 ? Math.round((lower ? baseline / value : value / baseline) * 100) / 100 : NaN);
    const c: Comparison = { bench, unit, slipway: value, baseline, baseline_is: baselineIs, ratio, better: lower ? 'lower value; ratio = baseline/slipway' : 'higher value; ratio = slipway/baseline', ...extra };
    if (minRatio !== undefined) {
      c.target = `ratio >= ${minRatio}`;
      c.met = ratio >= minRatio;
    }
    this.comparisons.push(c);
    process.stdout.write(JSON.stringify(c) + '\n');
    return c;
  }

  /** Writes the comparisons as a table on stderr. */
  table(): void {
    const cols = ['bench', 'unit', 'slipway', 'baseline', 'ratio', 'target', 'met', 'other_cpu_pct', 'steal_cpu_pct', 'baseline_is'];
    const cells = this.comparisons.map((c) => cols.map((k) => (c[k] === undefined || c[k] === null ? '-' : String(c[k]))));
    const widths = cols.map((k, i) => Math.max(k.length, ...cells.map((r) => r[i]!.length)));
    const fmt = (row: string[]) => row.map((v, i) => v.padEnd(widths[i]!)).join('  ');
    process.stderr.write(`\n${fmt(cols)}\n${fmt(widths.map((w) => '-'.repeat(w)))}\n${cells.map(fmt).join('\n')}\n`);
    process.stderr.write('other_cpu_pct, steal_cpu_pct: CPU % of one core used by other processes on this machine, and given by the hypervisor to other guests, while the figure was measured (mean of its windows).\n');
  }
}
