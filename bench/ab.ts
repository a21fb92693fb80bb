/**
 * Interleaved A/B of two Slipway builds: `node dist/bench/ab.js <checkout A> <checkout B>
 * [manifest|blob] [slices]`. Both checkouts must be built (`npx tsc -p .`).
 *
 * Why: on this shared machine, steal and other processes move a figure by up to 2× between two
 * runs a minute apart, so comparing a run of build A with a later run of build B measures the
 * machine's drift. Here both servers run at once, each with its own data directory and the same
 * small image pushed, and the load (64 raw keep-alive connections, manifest GET by tag or blob
 * HEAD) alternates between them in short slices in ABBA order, so drift lands on both alike.
 * Each slice reports req/s and the server's CPU microseconds per request (utime+stime of the
 * whole process from /proc, all threads); the summary is the median per build, with steal and
 * other-process CPU per slice.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RegistryClient } from './client.js';
import { buildSmallImage, MANIFEST_V2 } from './image.js';
import { pushImage } from './workloads/bulk.js';
import { REPO, type WorkloadContext } from './workloads/context.js';
import { buildRequest, RawConnection } from './rawhttp.js';
import { loadOptions } from './options.js';
import { installCleanup } from './cleanup.js';
import { CpuWindow } from './procstat.js';
import type { SlipwayTarget } from './servers/slipway.js';

/** One measured slice on one build. */
interface Slice {
  rps: number;
  /** Server CPU microseconds (all threads, user+system) per request. */
  cpuUs: number;
  steal: number;
  other: number;
}

const SLICE_MS = 2_000;
const CONNECTIONS = 64;

/** Starts the Slipway of the checkout at `dir` with that checkout's own bench starter (so its own dist/server). */
async function startBuild(dir: string): Promise<SlipwayTarget> {
  const mod = await import(pathToFileURL(join(resolve(dir), 'dist/bench/servers/slipway.js')).href) as { startSlipway: () => Promise<SlipwayTarget> };
  return mod.startSlipway();
}

/** Loads `target` for one slice; throws when any answer is wrong (a fast 404 is no figure). */
async function slice(target: SlipwayTarget, request: Buffer, url: URL, head: boolean): Promise<Slice> {
  const conns = Array.from({ length: CONNECTIONS }, () => new RawConnection(url));
  let n = 0;
  let bad = 0;
  let stop = false;
  let measuring = false;
  const loop = async (c: RawConnection) => {
    while (!stop) {
      const r = await c.send(request, head);
      if (r.status !== 200) bad++;
      if (measuring) n++;
    }
  };
  const loops = conns.map(loop);
  await new Promise((r) => setTimeout(r, 300)); // connections open and warm before the window
  measuring = true;
  const cpu = new CpuWindow(target.pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, SLICE_MS));
  const use = cpu.end();
  const secs = (performance.now() - t0) / 1000;
  measuring = false;
  stop = true;
  await Promise.all(loops);
  for (const c of conns) c.close();
  if (bad) throw new Error(`${bad} wrong answers from ${target.registry}`);
  return { rps: Math.round(n / secs), cpuUs: Math.round((use.server_cpu_pct / 100) * secs * 1e6 / n), steal: use.steal_cpu_pct, other: use.other_cpu_pct };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Entry point. */
async function main(): Promise<void> {
  const [dirA, dirB, kind = 'manifest', count = '10'] = process.argv.slice(2);
  if (!dirA || !dirB || (kind !== 'manifest' && kind !== 'blob')) {
    throw new Error('usage: node dist/bench/ab.js <checkout A> <checkout B> [manifest|blob] [slices per build]');
  }
  installCleanup();
  const opts = loadOptions({});
  const image = await buildSmallImage();
  const builds: Array<{ dir: string; target: SlipwayTarget; client: RegistryClient; slices: Slice[] }> = [];
  for (const dir of [dirA, dirB]) {
    const target = await startBuild(dir);
    const client = new RegistryClient(target.registry, target.authorization, CONNECTIONS);
    await pushImage({ client, image, opts } as WorkloadContext);
    builds.push({ dir, target, client, slices: [] });
  }
  try {
    const slices = Number(count) * 2;
    for (let i = 0; i < slices; i++) {
      const b = builds[(i % 2) ^ (Math.floor(i / 2) % 2)]!; // A B B A A B …
      const path = kind === 'manifest' ? `/v2/${REPO.image}/manifests/latest` : `/v2/${REPO.image}/blobs/${image.layer.digest}`;
      const url = new URL(path, b.target.registry);
      const headers: Record<string, string> = { authorization: b.target.authorization!, ...(kind === 'manifest' ? { accept: MANIFEST_V2 } : {}) };
      b.slices.push(await slice(b.target, buildRequest(kind === 'manifest' ? 'GET' : 'HEAD', url, headers), url, kind === 'blob'));
    }
  } finally {
    for (const b of builds) {
      await b.client.close();
      await b.target.stop();
    }
  }
  for (const b of builds) {
    const s = b.slices.slice(1); // the first slice of each build includes its JIT warm-up
    process.stdout.write(`${JSON.stringify({ bench: `ab_${kind}`, build: b.dir, median_rps: median(s.map((x) => x.rps)), median_cpu_us_per_request: median(s.map((x) => x.cpuUs)), slices: s })}\n`);
  }
}

main().then(() => process.exit(0), (e: Error) => {
  process.stderr.write(`bench/ab: ${e.message}\n`);
  process.exit(1);
});
