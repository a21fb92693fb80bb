/**
 * Bulk transfer workloads: 1 GiB push in one PATCH (with server CPU and peak RSS), 1 GiB push
 * in 16 MiB chunks, concurrent push of many 16 MiB blobs (pulls: pulls.ts).
 */
import { CpuWindow, cpuSeconds, pageFaults, RssSampler, statusKb, ThreadWindow } from '../procstat.js';
import { mbPerSecond, round } from '../stats.js';
import { progress, REPO, type WorkloadContext } from './context.js';
import { MANIFEST_V2 } from '../image.js';
import { pushChunked, pushEach, pushPostPut, pushSinglePatch } from './upload.js';
import type { Blob } from '../payload.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** Label of a size for figure fields. */
function sizeLabel(bytes: number): string {
  return bytes >= GiB ? `${bytes / GiB} GiB` : `${bytes / MiB} MiB`;
}

/** 1 GiB in one PATCH; also the server's CPU per GiB and its peak RSS during the push. */
export async function pushSingle(ctx: WorkloadContext): Promise<void> {
  const { target, client, big, opts, report } = ctx;
  const blob = big.single;
  progress(target.name, `push ${sizeLabel(blob.size)} in one PATCH`);
  const rssBefore = round(statusKb(target.pid, 'VmRSS') / 1024, 1);
  const cpu0 = cpuSeconds(target.pid);
  const window = new CpuWindow(target.pid);
  const threads = new ThreadWindow(target.pid);
  const rss = new RssSampler(target.pid, 50);
  const t0 = performance.now();
  let ms: number;
  let peak: { peakMiB: number; samples: number };
  try {
    await pushSinglePatch(client, REPO.big, blob, opts.transferTimeoutMs);
  } finally {
    ms = performance.now() - t0;
    peak = rss.stop();
  }
  const cpu = cpuSeconds(target.pid) - cpu0;
  const common = { server: target.name, bytes: blob.size, size: sizeLabel(blob.size) };
  report.add({ bench: 'push_1gib_single_patch', ...common, value: mbPerSecond(blob.size, ms), unit: 'MB/s', seconds: round(ms / 1000, 2), ...window.end() });
  report.add({ bench: 'server_cpu_per_gib_push', ...common, value: round(cpu / (blob.size / GiB), 2), unit: 's/GiB', cpu_seconds: round(cpu, 2), measured_on: 'push_1gib_single_patch', threads: threads.end() });
  let hwm: number | undefined;
  try {
    hwm = round(statusKb(target.pid, 'VmHWM') / 1024, 1);
  } catch {
    hwm = undefined;
  }
  report.add({ bench: 'server_peak_rss_push_1gib', ...common, value: peak.peakMiB, unit: 'MiB', samples: peak.samples, interval_ms: 50, rss_before_mib: rssBefore, vmhwm_since_start_mib: hwm });
}

/** 1 GiB as 16 MiB PATCHes with Content-Range, then PUT. */
export async function pushChunks(ctx: WorkloadContext): Promise<void> {
  const { target, client, big, opts, report } = ctx;
  const blob = big.chunked;
  progress(target.name, `push ${sizeLabel(blob.size)} in ${blob.chunks.length} chunks`);
  const window = new CpuWindow(target.pid);
  const threads = new ThreadWindow(target.pid);
  const cpu0 = cpuSeconds(target.pid);
  const t0 = performance.now();
  await pushChunked(client, REPO.big, blob, opts.transferTimeoutMs);
  const ms = performance.now() - t0;
  const cpu = cpuSeconds(target.pid) - cpu0;
  report.add({ bench: 'push_1gib_chunked_16mib', server: target.name, value: mbPerSecond(blob.size, ms), unit: 'MB/s', bytes: blob.size, size: sizeLabel(blob.size), patches: blob.chunks.length, seconds: round(ms / 1000, 2), ...window.end() });
  report.add({ bench: 'server_cpu_per_gib_push_chunked', server: target.name, value: round(cpu / (blob.size / GiB), 2), unit: 's/GiB', cpu_seconds: round(cpu, 2), measured_on: 'push_1gib_chunked_16mib', threads: threads.end() });
}

/** Many distinct 16 MiB blobs, a bounded number in flight, POST + PUT each; aggregate MB/s. */
export async function pushConcurrent(ctx: WorkloadContext): Promise<void> {
  await concurrentBurst(ctx, 'push_concurrent', ctx.many);
}

/**
 * The same burst again on the same server, other bytes: what a server that has taken pushes
 * before does (the first burst after a start also pays for the server's fresh buffer memory:
 * bench/README.md "Body lanes").
 */
export async function pushConcurrentAgain(ctx: WorkloadContext): Promise<void> {
  await concurrentBurst(ctx, 'push_concurrent_again', ctx.manyAgain);
}

async function concurrentBurst(ctx: WorkloadContext, bench: string, blobs: Blob[]): Promise<void> {
  const { target, client, opts, report } = ctx;
  progress(target.name, `${bench}: push ${blobs.length} x ${sizeLabel(opts.concurrentBlobBytes)}, ${opts.concurrentInFlight} at a time`);
  const window = new CpuWindow(target.pid);
  const threads = new ThreadWindow(target.pid);
  const cpu0 = cpuSeconds(target.pid);
  const faults0 = pageFaults(target.pid).minor;
  const t0 = performance.now();
  await pushEach(client, REPO.many, blobs, opts.concurrentInFlight, opts.transferTimeoutMs);
  const ms = performance.now() - t0;
  const bytes = blobs.reduce((n, b) => n + b.size, 0);
  const cpu = cpuSeconds(target.pid) - cpu0;
  const faults = pageFaults(target.pid).minor - faults0;
  // The server's first touches of new memory during the burst, and their CPU at the rate measured
  // in this run: most of what the first burst after a start costs over the next one.
  const touch = ctx.firstTouchMicros === undefined ? {} : { server_first_touch_cpu_s_per_gib: round((faults * ctx.firstTouchMicros) / 1e6 / (bytes / GiB), 2) };
  report.add({ bench, server: target.name, value: mbPerSecond(bytes, ms), unit: 'MB/s', blobs: blobs.length, blob_size: sizeLabel(opts.concurrentBlobBytes), in_flight: opts.concurrentInFlight, method: 'POST+PUT', seconds: round(ms / 1000, 2), server_cpu_s_per_gib: round(cpu / (bytes / GiB), 2), server_minor_faults: faults, ...touch, ...window.end(), threads: threads.end() });
}

/** Pushes the small image (config, layer, manifest by tag `latest`). */
export async function pushImage(ctx: WorkloadContext): Promise<void> {
  const { client, image, opts } = ctx;
  for (const b of [image.layer, image.config]) {
    await pushPostPut(client, REPO.image, { size: b.bytes.length, digest: b.digest, bytes: b.bytes }, opts.transferTimeoutMs);
  }
  const r = await client.call('PUT', `/v2/${REPO.image}/manifests/latest`, { headers: { 'content-type': MANIFEST_V2 }, body: image.manifest });
  if (r.status !== 201) throw new Error(`PUT manifest latest answered ${r.status}: ${r.body.toString().slice(0, 300)}`);
}
