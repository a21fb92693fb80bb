/**
 * Sequential latency workloads: manifest PUT under a new tag each time, and warm push (every
 * blob already present: HEAD each, then PUT the manifest). Bounded in count and time.
 */
import { latencySummary } from '../stats.js';
import { CpuWindow } from '../procstat.js';
import { MANIFEST_V2 } from '../image.js';
import { buildRequest, RawConnection } from '../rawhttp.js';
import { progress, REPO, type WorkloadContext } from './context.js';

/** Runs `fn(i)` sequentially up to `count` times or until `maxMs`; returns latencies. */
async function sequential(count: number, maxMs: number, fn: (i: number) => Promise<void>): Promise<{ n: number; p50: number; p99: number }> {
  const lat = new Float64Array(count);
  const deadline = performance.now() + maxMs;
  let n = 0;
  while (n < count && performance.now() < deadline) {
    const s = performance.now();
    await fn(n);
    lat[n++] = performance.now() - s;
  }
  return { n, ...latencySummary(lat, n) };
}

/** PUT the manifest under tags put-0, put-1, …; p50/p99. */
export async function manifestPut(ctx: WorkloadContext): Promise<void> {
  const { client, image, opts, report, target } = ctx;
  progress(target.name, `manifest PUT, up to ${opts.sequentialCount} sequential`);
  const headers = { 'content-type': MANIFEST_V2 };
  const cpu = new CpuWindow(target.pid);
  const r = await sequential(opts.sequentialCount, opts.sequentialMs, async (i) => {
    await client.expect([201], 'PUT', `/v2/${REPO.image}/manifests/put-${i}`, { headers, body: image.manifest });
  });
  const extra = { requests: r.n, sequential: true, ...cpu.end() };
  report.add({ bench: 'manifest_put_p50', server: target.name, value: r.p50, unit: 'ms', ...extra });
  report.add({ bench: 'manifest_put_p99', server: target.name, value: r.p99, unit: 'ms', ...extra });
}

/**
 * Warm push: HEAD config and layer (expect 200), then PUT the manifest under warm-<i>. The
 * HEADs go over one raw keep-alive connection (undici closes the connection after each HEAD,
 * which a docker client does not); the PUT goes through the undici Pool.
 */
export async function warmPush(ctx: WorkloadContext): Promise<void> {
  const { client, image, opts, report, target } = ctx;
  progress(target.name, `warm push, up to ${opts.sequentialCount} sequential`);
  const heads = [image.config.digest, image.layer.digest].map((d) => client.resolve(`/v2/${REPO.image}/blobs/${d}`));
  const auth: Record<string, string> = target.authorization ? { authorization: target.authorization } : {};
  const headReqs = heads.map((u) => buildRequest('HEAD', u, auth));
  const conn = new RawConnection(heads[0]!);
  const headers = { 'content-type': MANIFEST_V2 };
  let r: { n: number; p50: number; p99: number };
  const cpu = new CpuWindow(target.pid);
  try {
    r = await sequential(opts.sequentialCount, opts.sequentialMs, async (i) => {
      for (let k = 0; k < heads.length; k++) {
        const h = await conn.send(headReqs[k]!, true);
        if (h.status !== 200) throw new Error(`warm push: HEAD ${heads[k]} answered ${h.status}`);
      }
      await client.expect([201], 'PUT', `/v2/${REPO.image}/manifests/warm-${i}`, { headers, body: image.manifest });
    });
  } finally {
    conn.close();
  }
  const extra = { pushes: r.n, requests_per_push: heads.length + 1, head_tcp_connects: conn.connects, ...cpu.end() };
  report.add({ bench: 'warm_push_p50', server: target.name, value: r.p50, unit: 'ms', ...extra });
  report.add({ bench: 'warm_push_p99', server: target.name, value: r.p99, unit: 'ms', ...extra });
}
