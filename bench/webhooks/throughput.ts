/**
 * Events per second recorded and delivered by one node (bench/README.md "Webhooks"): windows of
 * releases driven through the API, one sequential client per app, alternating between apps
 * without webhooks and apps with one `sync` webhook each (so the node's own release rate without
 * deliveries is measured in the same run, between the measured windows). After each window
 * with webhooks the bench waits until every `api:release` delivery has arrived; the window's
 * delivery rate runs from its first request to its last arrival.
 */
import { CpuWindow, cpuSeconds } from '../procstat.js';
import { awaitDeliveries, release, type Api, type ReleaseMade, type ReceiverView } from './api.js';
import { meanCpu, pct, type CpuUse, type WebhookReport } from './figures.js';

/** Shape of the throughput phase. */
export interface ThroughputOptions {
  /** Apps driven at once (one client each), per kind (with and without webhooks). */
  apps: number;
  /** Windows per kind, alternating plain, hooked, plain, hooked, … */
  windows: number;
  /** Length of each window's driving, ms. */
  windowMs: number;
  /** Longest wait for a window's deliveries after its driving, ms. */
  drainMs: number;
}

/** One window's outcome. */
interface Window {
  made: ReleaseMade[];
  /** Driving time, s. */
  seconds: number;
  /** From the first request to the last delivery (hooked windows), s. */
  deliverySeconds: number;
  serverCpuS: number;
  cpu: CpuUse;
  /** Delivery latencies of hooked windows, ms: from the request sent, from the answer. */
  fromRequest: number[];
  fromAnswer: number[];
}

/** Drives `apps` for `ms`, one sequential client per app. */
async function drive(api: Api, apps: string[], ms: number): Promise<ReleaseMade[]> {
  const made: ReleaseMade[] = [];
  const until = performance.now() + ms;
  await Promise.all(apps.map(async (app) => {
    while (performance.now() < until) made.push(await release(api, app));
  }));
  return made;
}

/** One window on `apps`; `hooked`: wait for their deliveries (one per release). */
async function window(api: Api, pid: number, receiver: ReceiverView, apps: string[], hooked: boolean, o: ThroughputOptions): Promise<Window> {
  const cpu = new CpuWindow(pid);
  const cpu0 = cpuSeconds(pid);
  const t0 = Date.now();
  const made = await drive(api, apps, o.windowMs);
  const seconds = (Date.now() - t0) / 1000;
  const fromRequest: number[] = [];
  const fromAnswer: number[] = [];
  let deliverySeconds = seconds;
  if (hooked) {
    const arrivals = await awaitDeliveries(receiver, made, 1, o.drainMs);
    let last = 0;
    for (const m of made) {
      const at = arrivals.get(m.name)![0]!;
      last = Math.max(last, at);
      fromRequest.push(at - m.sentAt);
      fromAnswer.push(at - m.answeredAt);
    }
    deliverySeconds = (last - t0) / 1000;
  }
  return { made, seconds, deliverySeconds, serverCpuS: cpuSeconds(pid) - cpu0, cpu: cpu.end(), fromRequest, fromAnswer };
}

/**
 * Runs the phase on apps `plain` (no webhooks) and `hooked` (one sync webhook each, to
 * `receiver`) and prints its figures and comparisons.
 * @returns the releases made on the hooked apps (each expected once at the receiver)
 */
export async function throughputPhase(api: Api, pid: number, receiver: ReceiverView, plain: string[], hooked: string[], o: ThroughputOptions, report: WebhookReport): Promise<ReleaseMade[]> {
  const plainW: Window[] = [];
  const hookedW: Window[] = [];
  for (let i = 0; i < o.windows; i++) {
    plainW.push(await window(api, pid, receiver, plain, false, o));
    hookedW.push(await window(api, pid, receiver, hooked, true, o));
  }
  const sum = (ws: Window[], f: (w: Window) => number) => ws.reduce((n, w) => n + f(w), 0);
  const count = (ws: Window[]) => sum(ws, (w) => w.made.length);
  const ctx = (ws: Window[]) => ({ ...meanCpu(ws.map((w) => w.cpu)), clients: o.apps, windows: ws.length, window_s: o.windowMs / 1000, releases: count(ws) });
  const plainRate = Math.round(count(plainW) / sum(plainW, (w) => w.seconds));
  const hookedRate = Math.round(count(hookedW) / sum(hookedW, (w) => w.seconds));
  const deliveredRate = Math.round(count(hookedW) / sum(hookedW, (w) => w.deliverySeconds));
  const cpuMs = (ws: Window[]) => Math.round((sum(ws, (w) => w.serverCpuS) * 1e6) / count(ws)) / 1000;
  const fromRequest = hookedW.flatMap((w) => w.fromRequest);
  const fromAnswer = hookedW.flatMap((w) => w.fromAnswer);
  const c = ctx(hookedW);
  report.figure('webhook_releases_per_s', hookedRate, 'req/s', { ...c, what: 'releases (PATCH config-vars) answered per second on apps with one sync webhook each' });
  report.figure('webhook_deliveries_per_s', deliveredRate, 'deliveries/s', { ...c, what: 'api:release deliveries received per second, first request to last arrival of each window' });
  report.figure('webhook_delivery_latency_p50', pct(fromAnswer, 50), 'ms', { ...c, from_request_ms: pct(fromRequest, 50), what: 'API answer to arrival at the receiver (from the request sent: from_request_ms)' });
  report.figure('webhook_delivery_latency_p99', pct(fromAnswer, 99), 'ms', { ...c, from_request_ms: pct(fromRequest, 99), what: 'API answer to arrival at the receiver (from the request sent: from_request_ms)' });
  report.figure('webhook_server_cpu_per_release', cpuMs(hookedW), 'ms/release', { ...c, what: 'server CPU (all threads) per release, its delivery included' });
  report.figure('plain_releases_per_s', plainRate, 'req/s', { ...ctx(plainW), what: 'releases answered per second on apps without webhooks' });
  report.figure('plain_server_cpu_per_release', cpuMs(plainW), 'ms/release', { ...ctx(plainW), what: 'server CPU (all threads) per release without webhooks' });
  report.compare('webhook_deliveries_per_s', 'deliveries/s', deliveredRate, hookedRate, 'releases/s recorded in the same windows (delivery keeps up with recording)', 0.9, { other_cpu_pct: c.other_cpu_pct, steal_cpu_pct: c.steal_cpu_pct });
  report.compare('webhook_releases_per_s', 'req/s', hookedRate, plainRate, 'releases/s without webhooks, alternating windows', undefined, { other_cpu_pct: c.other_cpu_pct, steal_cpu_pct: c.steal_cpu_pct });
  report.compare('webhook_server_cpu_per_release', 'ms/release', cpuMs(hookedW), cpuMs(plainW), 'server CPU per release without webhooks, alternating windows', undefined, { other_cpu_pct: c.other_cpu_pct, steal_cpu_pct: c.steal_cpu_pct });
  return hookedW.flatMap((w) => w.made);
}
