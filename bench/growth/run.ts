/**
 * `npm run bench:growth`: how Slipway's costs change as the registry grows, beside the reference
 * (distribution 2.8.2, filesystem driver) in the same run (bench/README.md "Growth").
 *
 *   npm run bench:growth -- [--sizes 1000,10000,100000] [--backend embedded|cluster]
 *                           [--reference-storage filesystem|s3]
 *                           [--only slipway|reference] [--seed N] [--gets 20000]
 *                           [--heap-snapshots DIR] [--restart each|never] [--base CHECKOUT[,…]]
 *                           [--pg-shared-buffers 1GB]
 *
 * Each size step pushes images until the registry holds that many (1 config + 2 small layers
 * each, over 100 repositories `bench/r00`…`bench/r99`, 8 at a time, plain HTTP), then measures
 * manifest GET by tag (p50/p99, 8 raw keep-alive connections) of 1,000 of the step's new images
 * (their first read), of random images, and of a hot set of 256 images read again, the full tag
 * list of `bench/tags` (1,000 tags, pushed at the start), `?n=100` pages of the catalog and of
 * that tag list, the server's memory (RSS anonymous and file-backed apart, and Slipway's V8 heap,
 * external and ArrayBuffer memory from its /metrics; on PostgreSQL, the read barrier's mean
 * wait, the barriers over 5 ms and the cache's hit rate during the first reads and the hot-set
 * reads: barrier.ts), then restarts it on its data (start-up
 * time; `--restart never` skips that, so memory counts all the work since the first start).
 * After the last step, 10 % of the images are deleted (manifest DELETE by digest, 8 at a time),
 * each server's garbage collection runs (Slipway's `slipway gc`, online; the reference's
 * `docker-registry garbage-collect`, on the stopped registry), and every remaining image is
 * checked (manifest GET, HEAD of each blob). Prints JSON lines on stdout and a table on stderr,
 * with the machine's load, other processes' CPU and steal over each step.
 * On `--backend cluster` the reference stores on its S3 driver, in a bucket of its own on the same
 * RGW as Slipway (`--reference-storage s3`, the default there: both on one object store, each
 * with its own metadata), or on its filesystem (`filesystem`, the default on `embedded`).
 * PostgreSQL runs durable, with `shared_buffers` of 1 GB (`--pg-shared-buffers`): sized as an
 * operator sizes it, to hold the table and its index (about 8 KiB per image here: 248 MiB at
 * 30,000 images), not PostgreSQL's minimal default of 128 MB (docs/deployment.md "PostgreSQL").
 * `--base CHECKOUT[,CHECKOUT…]` runs other builds (each one's dist/server/cli.js) as servers of
 * their own, `slipway@base`, `slipway@base2`…, each on a data directory and through steps of its
 * own: a before/after in one run.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { installCleanup } from '../cleanup.js';
import { RegistryClient } from '../client.js';
import { CpuWindow, cpuSeconds, pageFaults, systemSeconds } from '../procstat.js';
import { ProcessShare } from '../process-share.js';
import { referenceAvailable } from '../servers/reference.js';
import { round } from '../stats.js';
import { makeImage, pushImage, pushImagesUpTo, REPOSITORIES, tagMany, type GrowthImage } from './images.js';
import { readMemory } from './memory.js';
import { barrierBetween, gcBetween, readNode } from './barrier.js';
import { firstReads, fullTagList, hotSetGets, manifestGets, page, timedRuns, warmGetPath, WARMUP_GETS } from './reads.js';
import { clusterEnv, startGrowthReference, startGrowthSlipway, type Backend, type GrowthReferenceS3, type GrowthServer } from './servers.js';
import type { S3Store } from '../../test/helpers/s3-store.js';
import { printTable, type StepRow } from './table.js';
import { verifyAfterGc, deleteShare } from './gc-step.js';

const CONCURRENCY = 8;
/** First reads per step: the step's new images read once each (reads.ts `firstReads`). */
const FIRST_READS = 1000;
/**
 * Timed GETs of random images, and of the hot set, per step (`--gets`). A p99 is the 1 % slowest:
 * of 4,000 GETs, the 40th. One pause of the main thread of 5–10 ms (a major collection, a hold of
 * the event loop) delays the 8 GETs in flight and those that queue behind them, 40–120 GETs at
 * 12,000–30,000 a second, and set such a p99 alone: over the runs of 2026-12-07 with one build the
 * random GETs' p99 at 1,000 images moved 1.47–3.70 ms with where a pause fell. Of 20,000, one pause
 * no longer does (bench/README.md "Growth").
 */
const GETS = 20_000;
/** Images in the hot set read again and again (reads.ts `hotSetGets`). */
const HOT_SET = 256;
const TAG_REPO = 'bench/tags';
const TAGS = 1000;
/** The tags of TAG_REPO: t0000…t0999. */
const TAG_NAMES: readonly string[] = Array.from({ length: TAGS }, (_, i) => `t${String(i).padStart(4, '0')}`);

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000,100000' },
    backend: { type: 'string', default: 'embedded' },
    'reference-storage': { type: 'string' },
    only: { type: 'string' },
    seed: { type: 'string' },
    gets: { type: 'string', default: String(GETS) },
    'heap-snapshots': { type: 'string' },
    restart: { type: 'string', default: 'each' },
    base: { type: 'string' },
    'pg-shared-buffers': { type: 'string', default: '1GB' },
  },
});
const sizes = values.sizes!.split(',').map((s) => Number(s.trim()));
if (sizes.some((s, i) => !Number.isInteger(s) || s < 100 || (i > 0 && s <= sizes[i - 1]!))) throw new Error(`--sizes: increasing whole numbers ≥ 100, not "${values.sizes}"`);
const backend = values.backend as Backend;
if (backend !== 'embedded' && backend !== 'cluster') throw new Error(`--backend: embedded or cluster, not "${values.backend}"`);
const referenceStorage = values['reference-storage'] ?? (backend === 'cluster' ? 's3' : 'filesystem');
if (referenceStorage !== 'filesystem' && referenceStorage !== 's3') throw new Error(`--reference-storage: filesystem or s3, not "${referenceStorage}"`);
if (values.restart !== 'each' && values.restart !== 'never') throw new Error(`--restart: each or never, not "${values.restart}"`);
const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const gets = Number(values.gets);
const snapshotDir = values['heap-snapshots'];

/** One server's state across the steps. */
interface Side { server: GrowthServer; client: RegistryClient; images: GrowthImage[]; pushesSinceStart: number }

function emit(obj: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function newClient(s: GrowthServer): RegistryClient {
  return new RegistryClient(s.registry, s.authorization, CONCURRENCY);
}

/** Pushes images `from`…`to - 1`, CONCURRENCY at a time; images/s. */
async function pushUpTo(side: Side, to: number): Promise<number> {
  const from = side.images.length;
  const t0 = performance.now();
  await pushImagesUpTo(side.client, seed, side.images, to, CONCURRENCY);
  side.pushesSinceStart += to - from;
  return round((to - from) / ((performance.now() - t0) / 1000), 1);
}

/** Pushes the 1,000-tag repository: one image (index -1), then its manifest under 999 more tags. */
async function pushTagRepo(side: Side): Promise<void> {
  await pushImage(side.client, seed, -1, TAG_REPO, TAG_NAMES[0]!);
  await tagMany(side.client, TAG_REPO, makeImage(seed, -1).manifest, TAG_NAMES.slice(1), CONCURRENCY);
}

/** Writes a heap snapshot of Slipway (started with --heapsnapshot-signal) and waits until it is complete. */
async function heapSnapshot(side: Side, label: string): Promise<void> {
  if (!snapshotDir || !side.server.slipway) return;
  const before = new Set(readdirSync(snapshotDir));
  process.kill(side.server.pid, 'SIGUSR2');
  const deadline = Date.now() + 300_000;
  let file: string | undefined;
  while (!file && Date.now() < deadline) {
    await sleep(200);
    file = readdirSync(snapshotDir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
  }
  if (!file) throw new Error('no heap snapshot written within 300 s');
  // The file is written after it appears; it is complete when it ends with the strings array's "]}".
  const path = `${snapshotDir}/${file}`;
  while (Date.now() < deadline) {
    const size = statSync(path).size;
    if (size > 2) {
      const tail = Buffer.alloc(2);
      const fd = openSync(path, 'r');
      try { readSync(fd, tail, 0, 2, size - 2); } finally { closeSync(fd); }
      if (tail.toString('latin1') === ']}') break;
    }
    await sleep(200);
  }
  emit({ bench: 'growth_heap_snapshot', server: side.server.name, step: label, file: path });
}

/** What the server spent on a run of `count` requests: minor faults and CPU µs per request, major faults, and the fault counts at its end. */
interface RequestCost<T> {
  result: T;
  minorFaultsPerRequest: number;
  cpuUsPerRequest: number;
  majorFaults: number;
  faultsAfter: ReturnType<typeof pageFaults>;
}

/** Runs `requests` (`count` of them) and reads the server's (`pid`) page faults and CPU around them. */
async function requestCost<T>(pid: number, count: number, requests: () => Promise<T>): Promise<RequestCost<T>> {
  const faults0 = pageFaults(pid);
  const cpu0 = cpuSeconds(pid);
  const result = await requests();
  const cpuUsPerRequest = round(((cpuSeconds(pid) - cpu0) * 1e6) / count, 1);
  const faultsAfter = pageFaults(pid);
  return { result, cpuUsPerRequest, faultsAfter, minorFaultsPerRequest: round((faultsAfter.minor - faults0.minor) / count, 2), majorFaults: faultsAfter.major - faults0.major };
}

/** One size step on one server: pushes, reads, memory, restart. */
async function step(side: Side, size: number): Promise<StepRow> {
  const s = side.server;
  const load1 = round(loadavg()[0]!, 1);
  const cpu = new CpuWindow(s.pid);
  const fresh = side.images.length;
  const pushRate = await pushUpTo(side, size);
  const pushCpu = cpu.end();
  const readCpu = new CpuWindow(s.pid);
  // Before any other GET of the step's images: its new images have not been read since the server started.
  await warmGetPath(s.registry, s.authorization, TAG_REPO, TAG_NAMES, WARMUP_GETS, CONCURRENCY, seed + size);
  const unread = side.images.slice(fresh, size);
  const firstNode0 = await readNode(s.admin);
  const firstShare = new ProcessShare([process.pid, s.pid]);
  const firstCount = Math.min(FIRST_READS, unread.length);
  const firstCost = await requestCost(s.pid, firstCount, () => firstReads(s.registry, s.authorization, unread, firstCount, CONCURRENCY, seed + size + 1));
  const first = firstCost.result;
  const firstOthers = firstShare.end();
  const firstNode = await readNode(s.admin);
  const firstBarrier = barrierBetween(firstNode0?.barrier ?? null, firstNode?.barrier ?? null);
  const getCost = await requestCost(s.pid, gets + WARMUP_GETS, () => manifestGets(s.registry, s.authorization, side.images, gets, CONCURRENCY, seed + size));
  const mget = getCost.result;
  const hotNode0 = await readNode(s.admin);
  const hotShare = new ProcessShare([process.pid, s.pid]);
  const hot = await hotSetGets(s.registry, s.authorization, side.images, HOT_SET, gets, CONCURRENCY, seed + size + 2);
  const hotOthers = hotShare.end();
  const majorFaultsHot = pageFaults(s.pid).major - getCost.faultsAfter.major;
  const hotNode = await readNode(s.admin);
  const hotBarrier = barrierBetween(hotNode0?.barrier ?? null, hotNode?.barrier ?? null);
  let tagCount = 0;
  const tagList = await timedRuns(10, async () => { tagCount = await fullTagList(side.client, TAG_REPO); });
  if (tagCount !== TAGS) throw new Error(`${s.name}: the tag list of ${TAG_REPO} holds ${tagCount} tags, not ${TAGS}`);
  const catalog = await timedRuns(20, async () => { if ((await page(side.client, '/v2/_catalog?n=100&last=bench/r49', 'repositories')) !== 51) throw new Error(`${s.name}: catalog page after bench/r49 is not the 51 repositories r50…r99, tags`); });
  // distribution 2.8 ignores n and last on tag lists (it answers every tag): the entries are printed.
  let tagPageEntries = 0;
  const tagPage = await timedRuns(20, async () => { tagPageEntries = await page(side.client, `/v2/${TAG_REPO}/tags/list?n=100&last=t0499`, 'tags'); });
  if (s.slipway && tagPageEntries !== 100) throw new Error(`${s.name}: tag page of ${TAG_REPO} holds ${tagPageEntries} tags, not 100`);
  const reads = readCpu.end();
  const memory = await readMemory(s.pid, s.admin);
  await heapSnapshot(side, `${size}`);
  const row: StepRow = {
    bench: 'growth', server: s.name, backend: s.slipway ? backend : referenceStorage, images: size, pushes_since_start: side.pushesSinceStart,
    push_images_per_s: pushRate, manifest_get_p50_ms: mget.p50, manifest_get_p99_ms: mget.p99, manifest_get_rps: mget.rps,
    first_get_p50_ms: first.p50, first_get_p99_ms: first.p99, first_get_rps: first.rps, hot_get_p50_ms: hot.p50, hot_get_p99_ms: hot.p99, hot_get_rps: hot.rps,
    first_barrier: firstBarrier, hot_barrier: hotBarrier, first_loop_max_ms: firstNode?.loopMaxMs ?? null, get_loop_max_ms: hotNode0?.loopMaxMs ?? null, hot_loop_max_ms: hotNode?.loopMaxMs ?? null,
    first_gc: gcBetween(firstNode0?.gc, firstNode?.gc), get_gc: gcBetween(firstNode?.gc, hotNode0?.gc), hot_gc: gcBetween(hotNode0?.gc, hotNode?.gc),
    first_others: firstOthers, hot_others: hotOthers,
    tag_list_1000_ms: tagList.median, tag_list_1000_first_ms: tagList.first, catalog_page_ms: catalog.median, tag_page_ms: tagPage.median, tag_page_entries: tagPageEntries, ...memory,
    startup_ms: null, rss_after_restart_mib: null, data_mib: null,
    load1, push_other_cpu_pct: pushCpu.other_cpu_pct, push_steal_cpu_pct: pushCpu.steal_cpu_pct, push_server_cpu_pct: pushCpu.server_cpu_pct,
    read_other_cpu_pct: reads.other_cpu_pct, read_steal_cpu_pct: reads.steal_cpu_pct,
    first_minor_faults_per_request: firstCost.minorFaultsPerRequest, first_server_cpu_us_per_request: firstCost.cpuUsPerRequest,
    get_minor_faults_per_request: getCost.minorFaultsPerRequest, get_server_cpu_us_per_request: getCost.cpuUsPerRequest,
    major_faults_first: firstCost.majorFaults, major_faults_get: getCost.majorFaults, major_faults_hot: majorFaultsHot,
    old_used_mib: [firstNode0?.oldUsedMiB ?? null, firstNode?.oldUsedMiB ?? null, hotNode0?.oldUsedMiB ?? null, hotNode?.oldUsedMiB ?? null],
  };
  const bytes = s.dataBytes();
  row.data_mib = bytes === null ? null : round(bytes / 1048576, 1);
  if (values.restart === 'each') {
    await side.client.close();
    await s.restart();
    side.client = newClient(s);
    side.pushesSinceStart = 0;
    // Idle RSS once the restarted server answers (a first request loads the request paths).
    await side.client.expect([200], 'GET', `/v2/${TAG_REPO}/tags/list?n=1`);
    row.startup_ms = round(s.startupMs, 0);
    row.rss_after_restart_mib = (await readMemory(s.pid)).rss_mib;
  }
  emit({ ...row });
  return row;
}

async function main(): Promise<void> {
  installCleanup();
  if (snapshotDir) {
    if (!existsSync(snapshotDir)) mkdirSync(snapshotDir, { recursive: true });
    process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}`.trim();
  }
  const wanted = values.only ? [values.only] : ['slipway', 'reference'];
  emit({ bench: 'growth_environment', seed, sizes, backend, reference_storage: referenceStorage, gets, concurrency: CONCURRENCY, repositories: REPOSITORIES, restart: values.restart, load: loadavg().map((l) => round(l, 2)), node: process.version });
  const stops: Array<() => Promise<void>> = [];
  const sides: Side[] = [];
  // One RGW for every server that stores on S3 (started on first use).
  let s3: S3Store | undefined;
  const s3Store = async (): Promise<S3Store> => {
    if (s3) return s3;
    const { startS3Store } = await import('../../test/helpers/s3-store.js');
    const started = await startS3Store();
    stops.push(() => started.stop());
    return (s3 = started);
  };
  try {
    if (wanted.includes('slipway')) {
      let env: Record<string, string> = {};
      if (backend === 'cluster') {
        const { startPostgres } = await import('../../test/helpers/postgres.js');
        const db = await startPostgres({ durable: true, settings: { shared_buffers: values['pg-shared-buffers']! } });
        stops.push(() => db.stop());
        const store = await s3Store();
        env = clusterEnv(db.connectionString, store.env('growth/', { SLIPWAY_S3_PART_SIZE: '16', SLIPWAY_S3_PUT_LIMIT: '' }));
      }
      const server = await startGrowthSlipway(backend, env);
      stops.unshift(() => server.stop());
      sides.push({ server, client: newClient(server), images: [], pushesSinceStart: 0 });
      // --base A[,B…]: each checkout's build is a server of its own, `slipway@base`, `slipway@base2`…
      const bases = values.base ? values.base.split(',').map((b) => b.trim()).filter(Boolean) : [];
      for (const [i, dir] of bases.entries()) {
        const cli = resolve(dir, 'dist/server/cli.js');
        if (!existsSync(cli)) throw new Error(`--base: ${cli} not found (build that checkout first)`);
        // On the cluster backend both builds would share one database and bucket: embedded only.
        if (backend !== 'embedded') throw new Error('--base runs on the embedded backend only');
        const base = await startGrowthSlipway(backend, {}, { name: i === 0 ? 'slipway@base' : `slipway@base${i + 1}`, cli });
        stops.unshift(() => base.stop());
        sides.push({ server: base, client: newClient(base), images: [], pushesSinceStart: 0 });
      }
    }
    if (wanted.includes('reference')) {
      if (!referenceAvailable()) process.stderr.write('growth: docker-registry not installed (apt-get install docker-registry): reference skipped\n');
      else {
        let onS3: GrowthReferenceS3 | undefined;
        if (referenceStorage === 's3') {
          const { rgw, client } = await s3Store();
          onS3 = { client, store: { endpoint: rgw.endpoint, region: rgw.region, bucket: 'reference', accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } };
        }
        const server = await startGrowthReference(onS3);
        stops.unshift(() => server.stop());
        sides.push({ server, client: newClient(server), images: [], pushesSinceStart: 0 });
      }
    }
    if (snapshotDir) delete process.env.NODE_OPTIONS;
    for (const side of sides) {
      emit({ bench: 'growth_server', server: side.server.name, pid: side.server.pid, startup_ms: round(side.server.startupMs, 0) });
      await pushTagRepo(side);
    }
    const rows: StepRow[] = [];
    for (const size of sizes) {
      for (const side of sides) {
        process.stderr.write(`growth: ${side.server.name} → ${size} images\n`);
        rows.push(await step(side, size));
      }
    }
    const gcRows: Array<Record<string, unknown>> = [];
    for (const side of sides) {
      process.stderr.write(`growth: ${side.server.name}: deleting 10 % and collecting\n`);
      const load1 = round(loadavg()[0]!, 1);
      // The reference's GC restarts it (a new pid): the window counts the whole machine.
      const sys0 = systemSeconds();
      const t0 = performance.now();
      const del = await deleteShare(side.client, side.images, 10, CONCURRENCY);
      const gc = await side.server.gc();
      const sys1 = systemSeconds();
      const pct = (x: number) => Math.round((x / ((performance.now() - t0) / 1000)) * 100);
      const cpuEnd = { busy_cpu_pct: pct(sys1.busy - sys0.busy), steal_cpu_pct: pct(sys1.steal - sys0.steal) };
      await side.client.close();
      side.client = newClient(side.server);
      const checked = await verifyAfterGc(side.client, side.images, 10, CONCURRENCY);
      const row = { bench: 'growth_gc', server: side.server.name, images: side.images.length, deleted_images: del.deleted, delete_ms: round(del.wallMs, 0),
        gc_wall_ms: round(gc.wallMs, 0), gc_blobs_freed: gc.blobs, gc_kib_freed: round(gc.bytes / 1024, 1), images_verified: checked, load1, ...cpuEnd };
      emit(row);
      gcRows.push(row);
    }
    printTable(rows, gcRows);
  } finally {
    for (const side of sides) await side.client.close();
    for (const stop of stops) await stop().catch((e) => process.stderr.write(`growth: stop: ${(e as Error).message}\n`));
  }
}

main().then(() => process.exit(0), (e) => { process.stderr.write(`growth: ${(e as Error).stack ?? String(e)}\n`); process.exit(1); });
