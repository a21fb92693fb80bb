/**
 * Pull workloads: the 1 GiB blob right after its push (in the page cache on both servers: both
 * write pushed bytes through it), the same blob twice more, and 16 distinct 64 MiB blobs pulled
 * at once right after their push. Each reports MB/s and the server's CPU seconds per GiB served. Every GET goes through
 * the raw counting client (bench/rawpull.ts), the same for both servers: undici's body stream
 * cost the client about a core at these speeds (bench/pull-limit.ts measures both).
 */
import { CpuWindow, cpuSeconds, ThreadWindow } from '../procstat.js';
import { mbPerSecond, round } from '../stats.js';
import type { Blob } from '../payload.js';
import { progress, REPO, type WorkloadContext } from './context.js';
import { pushPostPut } from './upload.js';
import { pullBlob } from '../rawpull.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
/** A pull fails when no body bytes arrive for this long (ms). */
const PULL_STALL_MS = 15_000;

/** GETs `blob` from `repo` (following one redirect); checks status and byte count. */
async function getBlob(ctx: WorkloadContext, repo: string, blob: Blob): Promise<void> {
  const { client } = ctx;
  const headers: Record<string, string> = client.authorization ? { authorization: client.authorization } : {};
  const r = await pullBlob(client.resolve(`/v2/${repo}/blobs/${blob.digest}`), headers, PULL_STALL_MS);
  if (r.bytes !== blob.size) throw new Error(`GET ${r.url} returned ${r.bytes} bytes, expected ${blob.size}`);
}

/** Runs `pulls` (all at once) and reports MB/s as `bench` and server CPU per GiB as `cpuBench`. */
async function measured(ctx: WorkloadContext, bench: string, cpuBench: string, repo: string, blobs: Blob[], extra: Record<string, unknown>): Promise<void> {
  const { target, report } = ctx;
  const window = new CpuWindow(target.pid);
  const threads = new ThreadWindow(target.pid);
  const cpu0 = cpuSeconds(target.pid);
  const t0 = performance.now();
  await Promise.all(blobs.map((b) => getBlob(ctx, repo, b)));
  const ms = performance.now() - t0;
  const cpu = cpuSeconds(target.pid) - cpu0;
  const bytes = blobs.reduce((n, b) => n + b.size, 0);
  report.add({ bench, server: target.name, value: mbPerSecond(bytes, ms), unit: 'MB/s', bytes, blobs: blobs.length, seconds: round(ms / 1000, 2), ...extra, ...window.end() });
  report.add({ bench: cpuBench, server: target.name, value: round(cpu / (bytes / GiB), 2), unit: 's/GiB', cpu_seconds: round(cpu, 2), measured_on: bench, threads: threads.end() });
}

/** GET of the 1 GiB blob pushed by the first workload (not yet pulled). */
export async function pull(ctx: WorkloadContext): Promise<void> {
  progress(ctx.target.name, `pull ${ctx.big.single.size / MiB} MiB right after its push`);
  await measured(ctx, 'pull_1gib', 'server_cpu_per_gib_pull', REPO.big, [ctx.big.single], { pull: 'first, right after the push' });
}

/** Two more GETs of the same blob: the second pull, then the third. */
export async function pullAgain(ctx: WorkloadContext): Promise<void> {
  progress(ctx.target.name, 'pull the same blob a second and a third time');
  await measured(ctx, 'pull_1gib_second', 'server_cpu_per_gib_pull_second', REPO.big, [ctx.big.single], { pull: 'second' });
  await measured(ctx, 'pull_1gib_cached', 'server_cpu_per_gib_pull_cached', REPO.big, [ctx.big.single], { pull: 'third (cached)' });
}

/** Pushes the pull blobs (untimed), then pulls all of them at once. */
export async function pullConcurrent(ctx: WorkloadContext): Promise<void> {
  const { opts, client } = ctx;
  const blobs = ctx.pullBlobs;
  progress(ctx.target.name, `push ${blobs.length} x ${opts.pullBlobBytes / MiB} MiB (untimed), then pull them all at once`);
  await Promise.all(blobs.map((b) => pushPostPut(client, REPO.pulls, b, opts.transferTimeoutMs)));
  await measured(ctx, 'pull_concurrent', 'server_cpu_per_gib_pull_concurrent', REPO.pulls, blobs, { blob_size: `${opts.pullBlobBytes / MiB} MiB`, in_flight: blobs.length });
}
