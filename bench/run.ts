/**
 * `npm run bench`: runs the same workloads, with the same client code, against Slipway and the
 * reference registry (CNCF distribution 2.8.2 as Debian's docker-registry), one server at a
 * time, and prints JSON lines: one per figure per server, then one per figure with the ratio
 * and target. BENCH_QUICK=1 shrinks sizes and durations; BENCH_ONLY=slipway|reference runs
 * one side; BENCH_WORKLOADS=push,pull (comma-separated name prefixes) runs only matching workloads. Child processes and temp dirs are cleaned up on every exit path.
 */
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { installCleanup, removeDir, trackDir } from './cleanup.js';
import { measurePushLimit, type PushLimit } from './push-limit.js';
import { measureStoringLimit, STORING_MODES, type StoringLimit } from './storing-limit.js';
import { measureFirstTouch, measureLimits, measureSyncLatency, pushDiskLimit, type Limit } from './limits.js';
import { handOverMemory } from './memory-handover.js';
import { measureLoadLimit, type LoadClient, type LoadLimit } from './load-limit.js';
import { measurePullLimit, type PullLimit } from './pull-limit.js';
import { printFeasibility } from './feasibility.js';
import { RegistryClient } from './client.js';
import { buildSmallImage } from './image.js';
import { loadOptions, type BenchOptions } from './options.js';
import { PayloadFactory } from './payload.js';
import { Report } from './report.js';
import { referenceAvailable, REFERENCE_BIN, startReference } from './servers/reference.js';
import { startSlipway } from './servers/slipway.js';
import type { Target } from './servers/target.js';
import { progress, type WorkloadContext } from './workloads/context.js';
import { pushChunks, pushConcurrent, pushConcurrentAgain, pushImage, pushSingle } from './workloads/bulk.js';
import { pull, pullAgain, pullConcurrent } from './workloads/pulls.js';
import { blobHead, manifestGet, manifestGetRaw } from './workloads/load.js';
import { manifestPut, warmPush } from './workloads/sequential.js';

/** The workloads, in order; later ones use what earlier ones pushed (see NEEDS). */
const WORKLOADS: Array<[string, (ctx: WorkloadContext) => Promise<void>]> = [
  ['push_1gib_single_patch', pushSingle],
  ['push_1gib_chunked_16mib', pushChunks],
  ['push_concurrent', pushConcurrent],
  ['push_concurrent_again', pushConcurrentAgain],
  ['pull_1gib', pull],
  ['pull_1gib_again', pullAgain],
  ['pull_concurrent', pullConcurrent],
  ['push_small_image', pushImage],
  ['manifest_get_64c', manifestGet],
  ['manifest_get_64c_raw', manifestGetRaw],
  ['blob_head_64c', blobHead],
  ['manifest_put', manifestPut],
  ['warm_push', warmPush],
];

/** Workloads that read what another workload pushed: selecting one runs its prerequisite too. */
const NEEDS: Record<string, string> = {
  pull_1gib: 'push_1gib_single_patch',
  pull_1gib_again: 'push_1gib_single_patch',
  manifest_get_64c: 'push_small_image',
  manifest_get_64c_raw: 'push_small_image',
  blob_head_64c: 'push_small_image',
  manifest_put: 'push_small_image',
  warm_push: 'push_small_image',
};

/**
 * Whether BENCH_WORKLOADS (comma-separated name prefixes; all when unset) selects `name`, directly
 * or as the prerequisite of a selected workload (without it, the load workloads would measure 404s).
 */
function selected(name: string): boolean {
  const prefixes = (process.env.BENCH_WORKLOADS ?? '').split(',').map((p) => p.trim()).filter(Boolean);
  const direct = (w: string) => prefixes.length === 0 || prefixes.some((p) => w.startsWith(p));
  return direct(name) || WORKLOADS.some(([w]) => NEEDS[w] === name && direct(w));
}

/** File system type of the temp dir (where both servers keep their data). */
function tmpFilesystem(): string {
  try {
    return execFileSync('df', ['--output=fstype', tmpdir()], { encoding: 'utf8' }).trim().split('\n').pop() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Bytes the push workload `name` writes (0 for the others): what the bench hands over to it (bench/memory-handover.ts). */
function pushedBytes(name: string, base: Omit<WorkloadContext, 'target' | 'client'>): number {
  if (name === 'push_1gib_single_patch') return base.big.single.size;
  if (name === 'push_1gib_chunked_16mib') return base.big.chunked.size;
  if (name === 'push_concurrent') return base.many.reduce((n, b) => n + b.size, 0);
  if (name === 'push_concurrent_again') return base.manyAgain.reduce((n, b) => n + b.size, 0);
  return 0;
}

/** Starts one server, runs every workload against it, stops it. Returns the number of failed workloads. */
async function runServer(name: 'slipway' | 'reference', base: Omit<WorkloadContext, 'target' | 'client'>): Promise<number> {
  progress(name, 'starting');
  const target: Target = name === 'slipway' ? await startSlipway() : await startReference();
  const client = new RegistryClient(target.registry, target.authorization, base.opts.loadConnections);
  base.report.note({ bench: 'server', server: name, version: target.version, registry: target.registry, pid: target.pid, loadavg_1m: Math.round(loadavg()[0]! * 100) / 100 });
  let failed = 0;
  const scratch = mkdtempSync(join(tmpdir(), 'slipway-bench-handover-'));
  trackDir(scratch);
  try {
    const ctx: WorkloadContext = { ...base, target, client };
    for (const [wname, fn] of WORKLOADS) {
      if (!selected(wname)) continue;
      try {
        const written = pushedBytes(wname, base);
        const handover = written > 0 ? await handOverMemory(join(scratch, 'handover'), written) : null;
        try {
          await fn(ctx);
        } finally {
          if (handover) {
            const h = await handover.end();
            base.report.note({ ...h, server: name, during: wname });
            progress(name, `${wname}: ${Math.round(h.released_bytes / 1024 ** 2)} of ${Math.round(written / 1024 ** 2)} MiB of page cache handed over as it pushed (written before it in ${h.write_ms} ms, ${h.write_cpu_s_per_gib} CPU-s/GiB)`);
          }
        }
      } catch (e) {
        failed++;
        const message = (e as Error).message;
        progress(name, `workload ${wname} FAILED: ${message}`);
        base.report.fail(wname, name, message);
      }
    }
  } finally {
    removeDir(scratch);
    await client.close();
    progress(name, 'stopping');
    await target.stop();
  }
  return failed;
}

/**
 * Sets each transfer figure's limit: pushes by the lowest of sha256, the disk's buffered write
 * with fdatasync (how pushed bytes are stored) and loopback; every pull by page-cache reads
 * (Slipway's pushed bytes are in the page cache, as the reference's are) and the pull client's
 * own limit at the pull's concurrency (loopback TCP to that client; the python `loopback` figure
 * only when the client's was not measured). The concurrent pushes are bounded also by the push
 * client against a sink and by the fastest mode of the least storing server (storing-limit.ts).
 */
function setLimits(report: Report, limits: Limit[], pullLimits: PullLimit[], sha256Rate: number, pushLimit?: PushLimit, storingLimits: StoringLimit[] = []): void {
  const get = (b: string) => limits.find((l) => l.bench === b)?.value;
  const lowest = (parts: Array<[string, number | undefined]>) => {
    const known = parts.filter((p): p is [string, number] => p[1] !== undefined).sort((a, b) => a[1] - b[1]);
    return known[0];
  };
  const loop: [string, number | undefined] = ['loopback', get('loopback')];
  const disk = (concurrent: boolean): [string, number | undefined] => {
    const d = pushDiskLimit(limits, concurrent);
    return [d?.bench === 'disk_write_sync_concurrent' ? 'disk write, as many at once' : 'disk write', d?.value];
  };
  const push = lowest([['sha256', sha256Rate], disk(false), loop]);
  const client = (label: string): [string, number | undefined] => ['pull client', pullLimits.find((p) => p.bench === `pull_limit_raw_${label}`)?.value];
  const cache: [string, number | undefined] = ['page cache', get('page_cache_read')];
  // The pull client's limit is loopback TCP from a server to the very client the pulls use; the
  // python receiver behind `loopback` reads slower than that client (1.3–1.5 against 3.6–3.8 GB/s
  // on 2026-11-27), so it bounds a pull only when the client's limit was not measured.
  const pullBound = (label: string) => {
    const c = client(label);
    return lowest([cache, c[1] === undefined ? loop : c]);
  };
  const single = pullBound('single');
  const many = pullBound('concurrent');
  if (push) for (const b of ['push_1gib_single_patch', 'push_1gib_chunked_16mib']) report.limit(b, push[1], push[0]);
  const storing = storingLimits.length > 0 ? Math.max(...storingLimits.map((l) => l.value)) : undefined;
  const concurrent = lowest([['sha256', sha256Rate], disk(true), loop, ['push client', pushLimit?.value], ['least storing server', storing]]);
  if (concurrent) for (const b of ['push_concurrent', 'push_concurrent_again']) report.limit(b, concurrent[1], concurrent[0]);
  if (single) for (const b of ['pull_1gib', 'pull_1gib_second', 'pull_1gib_cached']) report.limit(b, single[1], single[0]);
  if (many) report.limit('pull_concurrent', many[1], many[0]);
}

/**
 * The load workloads' limits (load-limit.ts), measured in this run when such a workload is
 * selected (BENCH_LOAD_LIMIT=0 skips them): the raw generator against a trivial server for the
 * raw workloads, undici's Pool against it for `manifest_get_64c` (answers of `manifestBytes`).
 * Sets each client's req/s and p99 as the limits of its workloads, and the trivial server's CPU
 * per request as the floor of their server CPU.
 */
async function loadLimit(opts: BenchOptions, report: Report, manifestBytes: number): Promise<LoadLimit[]> {
  const measured: LoadLimit[] = [];
  if (process.env.BENCH_LOAD_LIMIT === '0') return measured;
  const clients: Array<[LoadClient, string[], string]> = [
    ['raw', ['blob_head_64c', 'manifest_get_64c_raw'], 'raw keep-alive HEAD load (the blob HEAD client)'],
    ['undici', ['manifest_get_64c'], `undici Pool manifest GETs (the manifest_get_64c client, ${manifestBytes}-byte answers)`],
  ];
  for (const [client, workloads, what] of clients) {
    const chosen = workloads.filter(selected);
    if (chosen.length === 0) continue;
    progress('setup', `measuring the ${client} load generator against a trivial server (${opts.loadConnections} connections, ${opts.loadMs / 1000} s)`);
    const l = await measureLoadLimit(client, opts.loadConnections, opts.loadMs, opts.warmupMs, opts.loadMaxRequests, manifestBytes);
    measured.push(l);
    const bench = client === 'raw' ? 'limit_load_generator' : `limit_load_generator_${client}`;
    report.note({ bench, value: l.rps, unit: 'req/s', ...l, note: `${what} against a server that only answers: the most req/s this client drives here; client_cpu_us_per_request is the generator's own cost` });
    for (const w of chosen) {
      report.limit(`${w}_rps`, l.rps, `${client} load generator`);
      report.limit(`${w}_p99`, l.p99, `${client} load generator`);
      report.limit(`${w}_server_cpu`, l.server_cpu_us_per_request, 'trivial server');
    }
    process.stderr.write(`\n${client} load generator limit (this run): ${l.rps} req/s against a trivial server (p99 ${l.p99} ms); per request the generator spends ${l.client_cpu_us_per_request} us of CPU and the trivial server ${l.server_cpu_us_per_request} us (other ${l.other_cpu_pct}%, steal ${l.steal_cpu_pct}%)\n`);
  }
  return measured;
}

/** Entry point. */
async function main(): Promise<number> {
  installCleanup();
  const opts: BenchOptions = loadOptions();
  const report = new Report();
  report.note({
    bench: 'environment',
    cpus: cpus().length,
    mem_gib: Math.round(totalmem() / 1024 ** 3),
    node: process.version,
    quick: opts.quick,
    tmp_fs: tmpFilesystem(),
    note: `the client load generator (this process, one thread) shares the ${cpus().length} CPUs with the server under test; servers run one at a time on 127.0.0.1 over plain HTTP; MB = 10^6 bytes; latencies in ms`,
  });
  const started = performance.now();
  progress('setup', `generating payloads and digests (${opts.bigBytes / 1024 ** 2} MiB blobs, ${opts.concurrentBlobs} x ${opts.concurrentBlobBytes / 1024 ** 2} MiB)`);
  const payloads = new PayloadFactory(opts.patternBytes);
  const h0 = performance.now();
  const c0 = process.cpuUsage();
  const single = payloads.blob(opts.bigBytes, 'single-patch');
  const sha256Rate = Math.round(opts.bigBytes / 1e6 / ((performance.now() - h0) / 1000));
  const c1 = process.cpuUsage(c0);
  // CPU seconds rather than wall time: on a contended machine the wall time includes waiting for a CPU.
  const hashSecondsPerGiB = Math.round(((c1.user + c1.system) / 1e6 / (opts.bigBytes / 1024 ** 3)) * 100) / 100;
  report.note({ bench: 'client_sha256', value: sha256Rate, unit: 'MB/s', cpu_seconds_per_gib: hashSecondsPerGiB, note: 'node:crypto sha256 on this machine (hashing the big blob once): wall-clock speed and CPU seconds per GiB; a registry must hash every pushed byte' });
  const big = { single, chunked: payloads.blob(opts.bigBytes, 'chunked') };
  const many = Array.from({ length: opts.concurrentBlobs }, (_, i) => payloads.blob(opts.concurrentBlobBytes, `concurrent-${i}`));
  const manyAgain = Array.from({ length: opts.concurrentBlobs }, (_, i) => payloads.blob(opts.concurrentBlobBytes, `concurrent-again-${i}`));
  progress('setup', `measuring the machine's limits (${opts.bigBytes / 1024 ** 2} MiB: disk writes and reads, page cache, loopback)`);
  const pulls = ['pull_1gib', 'pull_concurrent'].some(selected);
  const pushes = selected('push_concurrent') ? { count: opts.concurrentBlobs, size: opts.concurrentBlobBytes, inFlight: opts.concurrentInFlight } : undefined;
  const limits = process.env.BENCH_LIMITS === '0' ? [] : await measureLimits(opts.bigBytes, pulls ? { count: opts.pullBlobs, size: opts.pullBlobBytes } : undefined, pushes);
  for (const l of limits) report.note({ ...l, bench: `limit_${l.bench}` });
  let pullLimits: PullLimit[] = [];
  if (pulls && process.env.BENCH_LIMITS !== '0') {
    progress('setup', `measuring the pull client against a server serving from memory (1 x ${opts.bigBytes / 1024 ** 2} MiB, ${opts.pullBlobs} x ${opts.pullBlobBytes / 1024 ** 2} MiB)`);
    pullLimits = await measurePullLimit(opts.bigBytes, opts.pullBlobs, opts.pullBlobBytes);
    for (const p of pullLimits) report.note({ ...p, note: 'the pull client against servers/trivial-blob.ts (serves from memory): the most this client pulls here; raw = bench/rawpull.ts (the pull workloads\' client), undici = bench/client.ts fetchCount' });
  }
  let pushLimit: PushLimit | undefined;
  if (selected('push_concurrent') && process.env.BENCH_LIMITS !== '0') {
    progress('setup', `measuring the push client against a server that discards the bytes (${opts.concurrentBlobs} x ${opts.concurrentBlobBytes / 1024 ** 2} MiB, ${opts.concurrentInFlight} at a time)`);
    pushLimit = await measurePushLimit(many, opts.concurrentInFlight, opts.transferTimeoutMs);
    report.note({ ...pushLimit });
  }
  const storingLimits: StoringLimit[] = [];
  if (selected('push_concurrent') && process.env.BENCH_LIMITS !== '0') {
    for (const mode of STORING_MODES) {
      progress('setup', `measuring the least storing server (hash ${mode}) with the concurrent push (${opts.concurrentBlobs} x ${opts.concurrentBlobBytes / 1024 ** 2} MiB, ${opts.concurrentInFlight} at a time)`);
      const s = await measureStoringLimit(many, opts.concurrentInFlight, opts.transferTimeoutMs, mode);
      storingLimits.push(s);
      report.note({ ...s });
    }
  }
  setLimits(report, limits, pullLimits, sha256Rate, pushLimit, storingLimits);
  if (selected('warm_push') && process.env.BENCH_LIMITS !== '0') {
    const sync = await measureSyncLatency();
    report.note({ ...sync });
    report.limit('warm_push_p50', sync.value, 'disk sync');
    progress('setup', `a durable 4 KiB commit (write + fdatasync) takes ${sync.value} ms here (p99 ${sync.p99} ms)`);
  }
  let firstTouchMicros: number | undefined;
  if (selected('push_concurrent') && process.env.BENCH_LIMITS !== '0') {
    const touch = measureFirstTouch();
    report.note({ ...touch });
    firstTouchMicros = touch.value;
    progress('setup', `the first touch of a page of new memory costs ${touch.value} µs of CPU here (rounds: ${touch.rounds_us_per_page.join(', ')})`);
  }
  const image = await buildSmallImage();
  const loadLimits = await loadLimit(opts, report, image.manifest.length);
  const pullBlobs = Array.from({ length: opts.pullBlobs }, (_, i) => payloads.blob(opts.pullBlobBytes, `pull-${i}`));
  const base = { opts, payloads, report, big, many, manyAgain, pullBlobs, image, firstTouchMicros };
  let failed = 0;
  for (const name of opts.servers) {
    if (name === 'reference' && !referenceAvailable()) {
      const msg = `reference registry not found at ${REFERENCE_BIN}; install it with: apt-get install docker-registry. Skipping the reference side.`;
      process.stderr.write(`bench: ${msg}\n`);
      report.note({ bench: 'reference', skipped: true, reason: msg });
      continue;
    }
    try {
      failed += await runServer(name, base);
    } catch (e) {
      failed++;
      progress(name, `FAILED: ${(e as Error).message}`);
      report.note({ bench: 'server_start', server: name, error: (e as Error).message });
    }
  }
  const rows = report.compare();
  report.table(rows);
  report.threadTable();
  report.returnedTable();
  printFeasibility({ limits, pullLimits, pushLimit, storingLimits, sha256Rate, hashSecondsPerGiB, loadLimits }, report);
  process.stderr.write(`machine: sha256 ${sha256Rate} MB/s (wall clock) in this run, and hashing alone costs ${hashSecondsPerGiB} s of CPU per GiB pushed (plus receiving and writing the bytes)\n`);
  process.stderr.write(`\nbench: finished in ${Math.round((performance.now() - started) / 1000)} s${failed ? `, ${failed} failure(s)` : ''}\n`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`bench: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
