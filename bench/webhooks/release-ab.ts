/**
 * The added cost per release (bench/README.md "Webhooks"): release latency (PATCH config-vars,
 * one at a time) on an app with no webhook, a second app with no webhook (the A/A pair, whose
 * difference is the noise), an app with 1 and one with 5 `sync` webhooks, in interleaved slices:
 * every round runs one slice of each, in an order rotated and reversed from round to round, so
 * the machine's drift lands on all of them. A slice on a hooked app ends when all its deliveries
 * have arrived, so no slice pays for another's deliveries.
 *
 * Compared per round (p50 of the baseline app / p50 of the other app), the median of the round
 * ratios is the figure. The noise is the factor by which the two identical apps' p50 differed in
 * the median round (n = median over rounds of max(r, 1/r) of the A/A ratios r; the largest is
 * printed too); the target is ratio >= 1/n: adding webhooks must not slow the median round more
 * than two identical apps differ in the median round. p99 is pooled over the rounds, its noise
 * the pooled A/A p99 ratio's factor.
 * Before the rounds, each app gets one unmeasured slice (warm-up).
 */
import { CpuWindow, cpuSeconds } from '../procstat.js';
import { awaitDeliveries, release, type Api, type ReleaseMade, type ReceiverView } from './api.js';
import { meanCpu, pct, type CpuUse, type WebhookReport } from './figures.js';

/** Shape of the A/B phase. */
export interface AbOptions {
  rounds: number;
  /** Releases per slice. */
  perSlice: number;
  /** Longest wait for a slice's deliveries, ms. */
  drainMs: number;
}

/** One app of the comparison and what was measured on it. */
export interface Variant {
  label: 'none' | 'none_aa' | '1' | '5';
  app: string;
  webhooks: number;
  ms: number[];
  /** API answer to arrival at the receiver of each delivery (ms), hooked apps only. */
  deliveryMs: number[];
  roundP50: number[];
  cpu: CpuUse[];
  serverCpuS: number;
  made: ReleaseMade[];
}

/** Round `r`'s order of the variants: rotated by r, reversed every other round. */
function order<T>(xs: T[], r: number): T[] {
  const rot = xs.map((_, i) => xs[(i + r) % xs.length]!);
  return r % 2 === 1 ? rot.reverse() : rot;
}

/** One slice: `perSlice` releases one at a time, then its deliveries awaited; `warm`: not kept. */
async function slice(api: Api, pid: number, receiver: ReceiverView, v: Variant, o: AbOptions, warm = false): Promise<void> {
  const cpu = new CpuWindow(pid);
  const cpu0 = cpuSeconds(pid);
  const made: ReleaseMade[] = [];
  for (let i = 0; i < o.perSlice; i++) made.push(await release(api, v.app));
  const arrivals = v.webhooks > 0 ? await awaitDeliveries(receiver, made, v.webhooks, o.drainMs) : undefined;
  v.made.push(...made);
  if (warm) return;
  if (arrivals) for (const m of made) v.deliveryMs.push(...arrivals.get(m.name)!.map((at) => at - m.answeredAt));
  v.serverCpuS += cpuSeconds(pid) - cpu0;
  v.cpu.push(cpu.end());
  v.ms.push(...made.map((m) => m.ms));
  v.roundP50.push(pct(made.map((m) => m.ms), 50));
}

/** Median (mean of the middle two for an even count). */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const r2 = (x: number) => Math.round(x * 100) / 100;
/** The factor by which a ratio departs from 1, either way (>= 1). */
const factor = (r: number) => Math.max(r, 1 / r);

/**
 * Runs the phase on `variants` (the first two without webhooks: baseline and A/A) and prints
 * figures and comparisons. @returns the variants with what was measured
 */
export async function releaseAbPhase(api: Api, pid: number, receiver: ReceiverView, variants: Variant[], o: AbOptions, report: WebhookReport): Promise<Variant[]> {
  for (const v of variants) await slice(api, pid, receiver, v, o, true);
  for (let r = 0; r < o.rounds; r++) {
    for (const v of order(variants, r)) await slice(api, pid, receiver, v, o);
  }
  for (const v of variants) {
    const ctx = { ...meanCpu(v.cpu), app: v.app, webhooks: v.webhooks, rounds: o.rounds, releases: v.ms.length };
    report.figure(`release_p50_webhooks_${v.label}`, pct(v.ms, 50), 'ms', ctx);
    report.figure(`release_p99_webhooks_${v.label}`, pct(v.ms, 99), 'ms', ctx);
    if (v.webhooks > 0) {
      const what = 'API answer to arrival at the receiver, releases one at a time';
      report.figure(`delivery_latency_p50_webhooks_${v.label}`, pct(v.deliveryMs, 50), 'ms', { ...ctx, deliveries: v.deliveryMs.length, what });
      report.figure(`delivery_latency_p99_webhooks_${v.label}`, pct(v.deliveryMs, 99), 'ms', { ...ctx, deliveries: v.deliveryMs.length, what });
    }
    report.figure(`release_server_cpu_webhooks_${v.label}`, Math.round((v.serverCpuS * 1e6) / v.ms.length) / 1000, 'ms/release', { ...ctx, what: 'server CPU (all threads) per release, its deliveries included' });
  }
  const [base, aa] = variants as [Variant, Variant];
  const roundRatios = (v: Variant) => base.roundP50.map((b, i) => r2(b / v.roundP50[i]!));
  const aaRatios = roundRatios(aa);
  const floor = r2(1 / median(aaRatios.map(factor)));
  const worst = r2(1 / Math.max(...aaRatios.map(factor)));
  const p99Floor = r2(1 / factor(pct(base.ms, 99) / pct(aa.ms, 99)));
  const cpuOf = (v: Variant) => meanCpu(v.cpu);
  for (const v of variants.slice(1)) {
    const ratios = roundRatios(v);
    const extra = { other_cpu_pct: cpuOf(v).other_cpu_pct, steal_cpu_pct: cpuOf(v).steal_cpu_pct, round_ratios: ratios, aa_round_ratios: aaRatios, aa_median_floor: floor, aa_worst_floor: worst };
    report.compare(`release_p50_webhooks_${v.label}`, 'ms', pct(v.ms, 50), pct(base.ms, 50), `p50 of app ${base.app} (no webhook); ratio: median of per-round p50 ratios; target: 1/(A/A factor of the median round)`, v === aa ? undefined : floor, extra, r2(median(ratios)));
    report.compare(`release_p99_webhooks_${v.label}`, 'ms', pct(v.ms, 99), pct(base.ms, 99), `p99 of app ${base.app} (no webhook), pooled; target: 1/(A/A p99 factor)`, v === aa ? undefined : p99Floor, { other_cpu_pct: extra.other_cpu_pct, steal_cpu_pct: extra.steal_cpu_pct });
    if (v !== aa) report.compare(`release_server_cpu_webhooks_${v.label}`, 'ms/release', r2((v.serverCpuS * 1e3) / v.ms.length), r2((base.serverCpuS * 1e3) / base.ms.length), `server CPU per release of app ${base.app} (no webhook); deliveries are work the node does`, undefined, { other_cpu_pct: extra.other_cpu_pct, steal_cpu_pct: extra.steal_cpu_pct });
  }
  return variants;
}
