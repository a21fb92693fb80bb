/**
 * Slipway on S3 through HTTP (not a unit test): push and pull of one 1 GiB blob and of 64 × 16
 * MiB blobs through `slipway serve` with SLIPWAY_BLOB_STORE=s3 on a Ceph RADOS Gateway started by
 * the test harness, and in the same run the same bytes uploaded (@aws-sdk/lib-storage Upload,
 * same part size 8 MiB and concurrency 4 as the server) and downloaded (GetObject) by the SDK
 * directly. Pulls are measured twice: streamed through Slipway, and through the 307 to a
 * presigned URL (a second server with SLIPWAY_S3_REDIRECT=on, whose pushes are not reported;
 * BENCH_S3_REDIRECT=0 skips it). Beside each streamed pull, the same SDK download through a bare
 * TCP relay (servers/tcp-relay.ts, its own process): the machine's limit for a process relaying
 * RGW to the client. BENCH_S3_PULL_REPEAT=N measures the trio direct, relay, Slipway N times,
 * and the pair direct, redirected N times (each redirected pull against the direct pull just
 * before it).
 *
 *   tsc -p . && node dist/bench/s3-http.js          # BENCH_S3_ROUNDS=1 by default
 *
 * Push: POST, one PATCH with the whole blob (Content-Length), PUT `?digest=` (skopeo's way) for
 * the 1 GiB blob; POST + PUT with the body for the 16 MiB ones, 4 in flight. Prints one JSON
 * line per figure (MB/s = 10^6 bytes/s; ratio = slipway/direct; server CPU seconds per GiB and
 * peak RSS sampled every 50 ms during the operation) and a table on stderr.
 */
import { Readable } from 'node:stream';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { S3Client, CreateBucketCommand, GetObjectCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { s3ClientConfig } from '../engine/blobs/s3-backend.js';
import { startCephRgw } from '../test/helpers/ceph-rgw.js';
import { startSlipway, type SlipwayTarget } from './servers/slipway.js';
import { RegistryClient } from './client.js';
import { PayloadFactory, lengthOf, segmentsOf, streamOf, type Blob } from './payload.js';
import { RssSampler, cpuSeconds, CpuWindow, ThreadWindow } from './procstat.js';
import { installCleanup } from './cleanup.js';
import { startTcpRelay } from './servers/tcp-relay.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const WIDTH = 4;
const ROUNDS = Number(process.env.BENCH_S3_ROUNDS ?? 1);
/** Workload names to run (BENCH_S3_WORKLOADS=1gib,64x16mib; default both). */
const WORKLOADS = (process.env.BENCH_S3_WORKLOADS ?? '1gib,64x16mib').split(',');
/** Streamed-pull measurements (direct, bare relay, Slipway) per workload and round. */
const PULL_REPEAT = Number(process.env.BENCH_S3_PULL_REPEAT ?? 1);
/** BENCH_S3_REDIRECT=0: no redirecting server, no 307 figures. */
const REDIRECT = process.env.BENCH_S3_REDIRECT !== '0';

let storePids: number[] = [];
/** CPU seconds so far of the Ceph daemons (pid files of the harness's cluster directory). */
function storeCpu(): number {
  let s = 0;
  for (const pid of storePids) {
    try { s += cpuSeconds(pid); } catch { /* exited */ }
  }
  return s;
}

interface Figure {
  mbps: number; seconds: number; serverCpuPerGiB?: number; serverPeakRssMiB?: number;
  /** Percent of one CPU over the operation: this client, the server, everything else, hypervisor steal. */
  cpu?: ReturnType<CpuWindow['end']>;
  /** CPU seconds per GiB of the Ceph daemons (radosgw, OSD, monitor) over the operation. */
  storeCpuPerGiB?: number;
  /** Server CPU seconds per thread (main first). */
  threads?: ReturnType<ThreadWindow['end']>;
}

async function pool<T>(items: T[], width: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

/**
 * Times `fn` moving `bytes`; with a server pid, its CPU per GiB, per thread and peak RSS
 * meanwhile; always the client's, the other processes' and the steal CPU share.
 */
async function measure(bytes: number, fn: () => Promise<void>, pid?: number): Promise<Figure> {
  const cpu0 = pid ? cpuSeconds(pid) : 0;
  const store0 = storeCpu();
  const rss = pid ? new RssSampler(pid) : undefined;
  const window = new CpuWindow(pid ?? process.pid);
  const threads = pid ? new ThreadWindow(pid) : undefined;
  const t0 = performance.now();
  await fn();
  const seconds = (performance.now() - t0) / 1000;
  const f: Figure = { mbps: Math.round(bytes / seconds / 1e6), seconds: Math.round(seconds * 100) / 100, cpu: window.end(), storeCpuPerGiB: Math.round(((storeCpu() - store0) / (bytes / GiB)) * 100) / 100 };
  if (!pid) { // no server: the window counted this client as the server too, and took it off `other` twice
    f.cpu!.other_cpu_pct += f.cpu!.server_cpu_pct;
    f.cpu!.server_cpu_pct = 0;
  }
  if (pid) {
    f.threads = threads!.end();
    f.serverCpuPerGiB = Math.round(((cpuSeconds(pid) - cpu0) / (bytes / GiB)) * 100) / 100;
    f.serverPeakRssMiB = rss!.stop().peakMiB;
  }
  return f;
}

async function push(c: RegistryClient, blob: Blob, single: boolean): Promise<void> {
  const segs = segmentsOf(blob);
  const loc = await c.startUpload('bench/web');
  if (single) {
    const p = await c.expect([202], 'PATCH', loc, { body: streamOf(segs), headers: { 'content-length': String(lengthOf(segs)), 'content-type': 'application/octet-stream' } });
    await c.expect([201], 'PUT', c.withDigest(c.location(p, loc), blob.digest), { headers: { 'content-length': '0' } });
  } else {
    await c.expect([201], 'PUT', c.withDigest(loc, blob.digest), { body: streamOf(segs), headers: { 'content-length': String(blob.size) } });
  }
}

async function pull(c: RegistryClient, blob: Blob, redirect: boolean): Promise<void> {
  const url = c.resolve(`/v2/bench/web/blobs/${blob.digest}`);
  const r = await c.fetchCount('GET', url, {}, 60_000);
  let bytes = r.bytes;
  if (redirect) {
    if (r.status !== 307 || !r.location) throw new Error(`expected a 307, got ${r.status}`);
    const res = await request(r.location);
    bytes = 0;
    for await (const chunk of res.body) bytes += (chunk as Buffer).length;
  } else if (r.status !== 200) throw new Error(`GET blob answered ${r.status}`);
  if (bytes !== blob.size) throw new Error(`pulled ${bytes} of ${blob.size} bytes`);
}

/** Downloads each blob's `direct/` object with GetObject through `client`, checking its length. */
function sdkPull(client: S3Client, Bucket: string, blobs: Blob[], width: number): Promise<void> {
  return pool(blobs, width, async (b) => {
    const r = await client.send(new GetObjectCommand({ Bucket, Key: `direct/${b.digest.slice(7)}` }));
    let n = 0;
    for await (const c of r.Body as Readable) n += (c as Buffer).length;
    if (n !== b.size) throw new Error('short direct read');
  });
}

async function main(): Promise<void> {
  installCleanup();
  const rgw = await startCephRgw({ memstoreBytes: 9 * GiB });
  process.stderr.write(`ceph-rgw ready in ${rgw.timings.total} ms\n`);
  storePids = readdirSync(join(rgw.dir, 'run')).filter((f) => f.endsWith('.pid')).map((f) => Number(readFileSync(join(rgw.dir, 'run', f), 'utf8').trim()));
  process.env.AWS_ACCESS_KEY_ID = rgw.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = rgw.secretAccessKey;
  const client = new S3Client(s3ClientConfig({ endpoint: rgw.endpoint, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } }));
  const Bucket = 'bench';
  await client.send(new CreateBucketCommand({ Bucket }));
  const relay = await startTcpRelay(rgw.endpoint);
  const viaRelay = new S3Client(s3ClientConfig({ endpoint: relay.url, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } }));
  const env = (prefix: string, redirect: boolean) => ({
    SLIPWAY_BLOB_STORE: 's3', SLIPWAY_S3_ENDPOINT: rgw.endpoint, SLIPWAY_S3_BUCKET: Bucket, SLIPWAY_S3_PREFIX: prefix,
    SLIPWAY_S3_PART_SIZE: '8', SLIPWAY_S3_UPLOAD_CONCURRENCY: String(WIDTH), SLIPWAY_S3_REDIRECT: redirect ? 'on' : 'off',
    SLIPWAY_GC_INTERVAL: '0',
  });
  const payload = new PayloadFactory(16 * MiB);
  const rows: Array<Record<string, unknown>> = [];
  const report = (bench: string, round: number, slipway: Figure, direct: Figure, relay?: Figure) => {
    const r2 = (x: number) => Math.round(x * 100) / 100;
    const row = { bench, round, slipway, direct, ratio: r2(slipway.mbps / direct.mbps), ...(relay ? { relay, relayRatio: r2(relay.mbps / direct.mbps), ofRelay: r2(slipway.mbps / relay.mbps) } : {}) };
    rows.push(row);
    process.stdout.write(JSON.stringify(row) + '\n');
  };
  for (let round = 1; round <= ROUNDS; round++) {
    const workloads = ([
      { name: '1gib', blobs: [payload.blob(GiB, `r${round}-big`)], width: 1 },
      { name: '64x16mib', blobs: Array.from({ length: 64 }, (_, i) => payload.blob(16 * MiB, `r${round}-${i}`)), width: WIDTH },
    ]).filter((w) => WORKLOADS.includes(w.name));
    const servers: SlipwayTarget[] = [];
    try {
      const plain = await startSlipway(env(`r${round}/`, false));
      servers.push(plain);
      const redirecting = REDIRECT ? await startSlipway(env(`r${round}-redirect/`, true)) : undefined;
      if (redirecting) servers.push(redirecting);
      const viaPlain = new RegistryClient(plain.registry, plain.authorization, WIDTH);
      const viaRedirect = redirecting && new RegistryClient(redirecting.registry, redirecting.authorization, WIDTH);
      for (const wl of workloads) {
        const total = wl.blobs.length * wl.blobs[0]!.size;
        const single = wl.blobs.length === 1;
        const pushSlipway = await measure(total, () => pool(wl.blobs, wl.width, (b) => push(viaPlain, b, single)), plain.pid);
        const pushDirect = await measure(total, () => pool(wl.blobs, wl.width, async (b) => {
          const up = new Upload({ client, queueSize: WIDTH, partSize: 8 * MiB, leavePartsOnError: false, params: { Bucket, Key: `direct/${b.digest.slice(7)}`, Body: Readable.from(segmentsOf(b)) } });
          await up.done();
        }));
        report(`s3_http_push_${wl.name}`, round, pushSlipway, pushDirect);
        for (let rep = 0; rep < PULL_REPEAT; rep++) {
          const pullDirect = await measure(total, () => sdkPull(client, Bucket, wl.blobs, wl.width));
          const pullRelay = await measure(total, () => sdkPull(viaRelay, Bucket, wl.blobs, wl.width), relay.pid);
          const pullSlipway = await measure(total, () => pool(wl.blobs, wl.width, (b) => pull(viaPlain, b, false)), plain.pid);
          report(`s3_http_pull_${wl.name}`, round, pullSlipway, pullDirect, pullRelay);
        }
        if (redirecting && viaRedirect) {
          await pool(wl.blobs, wl.width, (b) => push(viaRedirect, b, single));
          // Each redirected pull is compared with a direct pull measured just before it: the two
          // move the same bytes from the same store, so only adjacent windows compare fairly.
          for (let rep = 0; rep < PULL_REPEAT; rep++) {
            const pullBefore = await measure(total, () => sdkPull(client, Bucket, wl.blobs, wl.width));
            const pullRedirect = await measure(total, () => pool(wl.blobs, wl.width, (b) => pull(viaRedirect, b, true)), redirecting.pid);
            report(`s3_http_pull_redirect_${wl.name}`, round, pullRedirect, pullBefore);
          }
        }
        for (const b of wl.blobs) await client.send(new DeleteObjectCommand({ Bucket, Key: `direct/${b.digest.slice(7)}` }));
      }
      await viaPlain.close();
      await viaRedirect?.close();
    } finally {
      for (const s of servers) await s.stop();
    }
  }
  process.stderr.write('figure                          round  slipway MB/s (cpu s/GiB, peak RSS MiB, store cpu s/GiB)  direct MB/s (store)  ratio  other%/steal% slipway | direct\n');
  for (const r of rows as Array<{ bench: string; round: number; slipway: Figure; direct: Figure; ratio: number }>) {
    const os = (f: Figure) => `${f.cpu?.other_cpu_pct}/${f.cpu?.steal_cpu_pct}`;
    process.stderr.write(`${r.bench.padEnd(31)} ${String(r.round).padStart(5)}  ${String(r.slipway.mbps).padStart(6)} (${r.slipway.serverCpuPerGiB}, ${r.slipway.serverPeakRssMiB}, ${r.slipway.storeCpuPerGiB})`.padEnd(86) +
      `${String(r.direct.mbps).padStart(6)} (${r.direct.storeCpuPerGiB})`.padEnd(20) + `${String(r.ratio).padStart(5)}  ${os(r.slipway)} | ${os(r.direct)}\n`);
  }
  type PullRow = { bench: string; round: number; slipway: Figure; direct: Figure; relay: Figure; ratio: number; relayRatio: number; ofRelay: number };
  const trios = rows.filter((r) => 'relay' in r) as PullRow[];
  if (trios.length) {
    process.stderr.write('\nstreamed pulls           round  direct MB/s  bare relay MB/s (x direct, cpu s/GiB)  slipway MB/s (x direct, x relay, cpu s/GiB)  other%/steal% direct | relay | slipway\n');
    const os = (f: Figure) => `${f.cpu?.other_cpu_pct}/${f.cpu?.steal_cpu_pct}`;
    for (const r of trios) {
      process.stderr.write(`${r.bench.padEnd(24)} ${String(r.round).padStart(5)}  ${String(r.direct.mbps).padStart(11)}  ` +
        `${String(r.relay.mbps).padStart(6)} (${r.relayRatio}, ${r.relay.serverCpuPerGiB})`.padEnd(39) +
        `${String(r.slipway.mbps).padStart(6)} (${r.ratio}, ${r.ofRelay}, ${r.slipway.serverCpuPerGiB})`.padEnd(45) +
        `${os(r.direct)} | ${os(r.relay)} | ${os(r.slipway)}\n`);
    }
  }
  client.destroy();
  viaRelay.destroy();
  await relay.stop();
  await rgw.stop();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
