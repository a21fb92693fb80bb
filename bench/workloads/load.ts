/**
 * Closed-loop load: N connections, each sending its next request as soon as the previous one
 * answered, for a fixed duration after a short warm-up. Reports req/s, p50 and p99 latency,
 * plus the CPU use of the client (this process), of the server and of everything else on the
 * machine over the measured window, so a client-bound or contended figure can be recognised, and
 * the server's and the client's CPU microseconds per request (`<name>_server_cpu`).
 */
import { latencySummary, round } from '../stats.js';
import { MANIFEST_V2 } from '../image.js';
import { CpuWindow, cpuSeconds } from '../procstat.js';
import { buildRequest, RawConnection } from '../rawhttp.js';
import { progress, REPO, type WorkloadContext } from './context.js';

/** Result of one closed-loop run. */
export interface LoadResult {
  requests: number;
  errors: number;
  firstError?: string;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
}

/**
 * Runs `fn(loop)` from `connections` concurrent loops for `durationMs` (and at most
 * `maxRequests` recorded requests). `fn` resolves true for a correct answer.
 */
export async function closedLoop(connections: number, durationMs: number, maxRequests: number, fn: (loop: number) => Promise<boolean>): Promise<LoadResult> {
  const lat = new Float64Array(maxRequests);
  let n = 0;
  let errors = 0;
  let firstError: string | undefined;
  const t0 = performance.now();
  const deadline = t0 + durationMs;
  const loop = async (i: number) => {
    while (n < maxRequests) {
      const s = performance.now();
      if (s >= deadline) return;
      let ok = false;
      try {
        ok = await fn(i);
      } catch (e) {
        firstError ??= (e as Error).message;
        if (errors > 10_000) throw new Error(`too many errors; first: ${firstError}`);
      }
      if (!ok) errors++;
      if (n < maxRequests) lat[n++] = performance.now() - s;
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, i) => loop(i)));
  const seconds = (performance.now() - t0) / 1000;
  return { requests: n, errors, firstError, seconds: round(seconds, 2), rps: round(n / seconds, 0), ...latencySummary(lat, n) };
}

/** Warm-up then measured closed loop; emits `<name>_rps`, `<name>_p50`, `<name>_p99`. */
async function measure(ctx: WorkloadContext, name: string, client: string, fn: (loop: number) => Promise<boolean>, conns?: RawConnection[]): Promise<void> {
  const { opts, report, target } = ctx;
  await closedLoop(opts.loadConnections, opts.warmupMs, opts.loadMaxRequests, fn);
  const opened = () => (conns ?? []).reduce((n, c) => n + c.connects, 0);
  const opened0 = opened();
  const cpu = new CpuWindow(target.pid);
  const server0 = cpuSeconds(target.pid);
  const client0 = process.cpuUsage();
  const r = await closedLoop(opts.loadConnections, opts.loadMs, opts.loadMaxRequests, fn);
  // A throughput of wrong answers (a 404 is fast) is no figure: fail the workload instead.
  if (r.errors > 0) throw new Error(`${r.errors} of ${r.requests} requests got a wrong answer${r.firstError ? ` (first error: ${r.firstError})` : ' (unexpected status or length)'}`);
  const extra = {
    client, connections: opts.loadConnections, requests: r.requests, errors: r.errors, seconds: r.seconds,
    ...cpu.end(), ...(conns ? { tcp_connects: opened() - opened0 } : {}),
    ...(r.firstError ? { first_error: r.firstError } : {}),
  };
  report.add({ bench: `${name}_rps`, server: target.name, value: r.rps, unit: 'req/s', ...extra });
  report.add({ bench: `${name}_p50`, server: target.name, value: r.p50, unit: 'ms', ...extra });
  report.add({ bench: `${name}_p99`, server: target.name, value: r.p99, unit: 'ms', ...extra });
  // CPU per request (all threads, utime+stime): the cost of an answer, whatever else ran.
  const perRequest = (seconds: number) => round((seconds * 1e6) / Math.max(1, r.requests), 1);
  const c = process.cpuUsage(client0);
  report.add({ bench: `${name}_server_cpu`, server: target.name, value: perRequest(cpuSeconds(target.pid) - server0), unit: 'us/req', client_cpu_us_per_request: perRequest((c.user + c.system) / 1e6), ...extra });
}

/** Request headers the raw client sends (the Authorization of the target, if any). */
function rawHeaders(ctx: WorkloadContext, extra: Record<string, string> = {}): Record<string, string> {
  return ctx.target.authorization ? { ...extra, authorization: ctx.target.authorization } : extra;
}

/** GET the manifest by tag with 64 connections, through the undici Pool. */
export async function manifestGet(ctx: WorkloadContext): Promise<void> {
  const { client, image, target, opts } = ctx;
  progress(target.name, `manifest GET by tag (undici), ${opts.loadConnections} connections, ${opts.loadMs / 1000} s`);
  const url = client.resolve(`/v2/${REPO.image}/manifests/latest`);
  const headers = { accept: MANIFEST_V2 };
  const want = image.manifest.length;
  await measure(ctx, 'manifest_get_64c', 'undici Pool', async () => {
    const r = await client.fetchCount('GET', url, headers);
    return r.status === 200 && r.bytes === want;
  });
}

/** GET the manifest by tag with 64 raw keep-alive connections (low client overhead). */
export async function manifestGetRaw(ctx: WorkloadContext): Promise<void> {
  const { client, image, target, opts } = ctx;
  progress(target.name, `manifest GET by tag (raw keep-alive), ${opts.loadConnections} connections, ${opts.loadMs / 1000} s`);
  const url = client.resolve(`/v2/${REPO.image}/manifests/latest`);
  const req = buildRequest('GET', url, rawHeaders(ctx, { accept: MANIFEST_V2 }));
  const conns = Array.from({ length: opts.loadConnections }, () => new RawConnection(url));
  const want = image.manifest.length;
  try {
    await measure(ctx, 'manifest_get_64c_raw', 'raw keep-alive (node:net)', async (i) => {
      const r = await conns[i]!.send(req, false);
      return r.status === 200 && r.bytes === want;
    }, conns);
  } finally {
    for (const c of conns) c.close();
  }
}

/** HEAD the layer blob with 64 raw keep-alive connections (undici closes after each HEAD). */
export async function blobHead(ctx: WorkloadContext): Promise<void> {
  const { client, image, target, opts } = ctx;
  progress(target.name, `blob HEAD (raw keep-alive), ${opts.loadConnections} connections, ${opts.loadMs / 1000} s`);
  const url = client.resolve(`/v2/${REPO.image}/blobs/${image.layer.digest}`);
  const req = buildRequest('HEAD', url, rawHeaders(ctx));
  const conns = Array.from({ length: opts.loadConnections }, () => new RawConnection(url));
  try {
    await measure(ctx, 'blob_head_64c', 'raw keep-alive (node:net)', async (i) => (await conns[i]!.send(req, true)).status === 200, conns);
  } finally {
    for (const c of conns) c.close();
  }
}
