/**
 * S3 blob backend benchmark (not a unit test): the same bytes uploaded and downloaded through
 * engine/blobs/s3-backend.ts and, in the same run, by the AWS SDK directly (@aws-sdk/lib-storage
 * Upload with the same part size and concurrency; GetObject) to a Ceph RADOS Gateway started
 * by the test harness on this machine.
 *
 *   tsc -p . && node dist/bench/s3.js          # BENCH_S3_ROUNDS=2 by default
 *
 * Workloads: one 1 GiB blob (appended in 1 MiB chunks), and 64 × 16 MiB blobs, 4 in flight.
 * Prints one JSON line per figure on stdout (MB/s = 10^6 bytes/s, client CPU seconds of this
 * process, CPU seconds of the Ceph daemons, ratio backend/direct) and a table on stderr.
 */
import { randomBytes, createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { S3Client, CreateBucketCommand, GetObjectCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { S3BlobBackend, s3ClientConfig } from '../engine/blobs/s3-backend.js';
import type { Digest } from '../engine/digest.js';
import { startCephRgw } from '../test/helpers/ceph-rgw.js';
import { cpuSeconds } from './procstat.js';

const MiB = 1024 * 1024;
const PART = 8 * MiB;
const CONCURRENCY = 4;
const ROUNDS = Number(process.env.BENCH_S3_ROUNDS ?? 2);
const pattern = randomBytes(16 * MiB);

/** A blob made of `size` bytes of the pattern with `tag` written over its first 8 bytes. */
function blobBytes(size: number, tag: number): { chunks: (chunk: number) => Generator<Buffer>; digest: Digest } {
  const head = Buffer.from(pattern.subarray(0, Math.min(size, pattern.length)));
  head.writeDoubleLE(tag, 0);
  function* chunks(chunk: number): Generator<Buffer> {
    for (let at = 0; at < size; at += chunk) {
      const off = at % pattern.length;
      const src = at < head.length ? head : pattern;
      yield src.subarray(off, Math.min(off + chunk, pattern.length, off + size - at));
    }
  }
  const h = createHash('sha256');
  for (const c of chunks(MiB)) h.update(c);
  return { chunks, digest: `sha256:${h.digest('hex')}` as Digest };
}

async function drain(s: Readable): Promise<number> {
  let n = 0;
  for await (const c of s) n += (c as Buffer).length;
  return n;
}

async function pool<T>(items: T[], width: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

function stealTicks(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return cpu[7] ?? 0;
}

interface Figure { mbps: number; clientCpu: number; cephCpu: number; stealPct: number; seconds: number }

async function main(): Promise<void> {
  const rgw = await startCephRgw({ memstoreBytes: 6 * 1024 ** 3 });
  process.stderr.write(`ceph-rgw ready in ${rgw.timings.total} ms ${JSON.stringify(rgw.timings)}\n`);
  const cephPids = readdirSync(join(rgw.dir, 'run')).filter((f) => f.endsWith('.pid'))
    .map((f) => Number(readFileSync(join(rgw.dir, 'run', f), 'utf8')));
  const cephCpu = () => cephPids.reduce((s, p) => s + cpuSeconds(p), 0);
  const client = new S3Client(s3ClientConfig({
    endpoint: rgw.endpoint, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
  }));
  const Bucket = 'bench';
  await client.send(new CreateBucketCommand({ Bucket }));
  const backend = new S3BlobBackend({ client, bucket: Bucket, prefix: 'slipway/', partSize: PART, uploadConcurrency: CONCURRENCY });

  async function measure(bytes: number, fn: () => Promise<void>): Promise<Figure> {
    const c0 = process.cpuUsage();
    const k0 = cephCpu();
    const s0 = stealTicks();
    const t0 = process.hrtime.bigint();
    await fn();
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    const steal = (stealTicks() - s0) / 100; // USER_HZ
    return {
      mbps: Math.round(bytes / seconds / 1e6), seconds: Math.round(seconds * 100) / 100,
      clientCpu: Math.round((c.user + c.system) / 1e4) / 100, cephCpu: Math.round((cephCpu() - k0) * 100) / 100,
      stealPct: Math.round((steal / (seconds * 2)) * 1000) / 10,
    };
  }

  const workloads = [
    { name: '1gib', blobs: [blobBytes(1024 * MiB, 1)], width: 1 },
    { name: '64x16mib', blobs: Array.from({ length: 64 }, (_, i) => blobBytes(16 * MiB, 100 + i)), width: CONCURRENCY },
  ];
  const rows: Array<Record<string, unknown>> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const wl of workloads) {
      const total = wl.blobs.length * (wl.name === '1gib' ? 1024 * MiB : 16 * MiB);
      let id = 0;
      const viaBackend = await measure(total, () => pool(wl.blobs, wl.width, async (b) => {
        const w = await backend.create(`bench${round}-${wl.name}-${id++}`);
        for (const c of b.chunks(MiB)) await w.append(c);
        await w.commit(b.digest);
      }));
      const direct = await measure(total, () => pool(wl.blobs, wl.width, async (b) => {
        const up = new Upload({
          client, queueSize: CONCURRENCY, partSize: PART, leavePartsOnError: false,
          params: { Bucket, Key: `direct/${b.digest.slice(7)}`, Body: Readable.from(b.chunks(MiB)) },
        });
        await up.done();
      }));
      const getBackend = await measure(total, () => pool(wl.blobs, wl.width, async (b) => {
        if (await drain(await backend.read(b.digest)) !== total / wl.blobs.length) throw new Error('short read');
      }));
      const getDirect = await measure(total, () => pool(wl.blobs, wl.width, async (b) => {
        const r = await client.send(new GetObjectCommand({ Bucket, Key: `direct/${b.digest.slice(7)}` }));
        if (await drain(r.Body as Readable) !== total / wl.blobs.length) throw new Error('short read');
      }));
      for (const [op, mine, ref] of [['upload', viaBackend, direct], ['download', getBackend, getDirect]] as const) {
        const row = { bench: `s3_${op}_${wl.name}`, round, backend: mine, direct: ref, ratio: Math.round((mine.mbps / ref.mbps) * 100) / 100 };
        rows.push(row);
        process.stdout.write(JSON.stringify(row) + '\n');
      }
      for (const b of wl.blobs) {
        await backend.delete(b.digest);
        await client.send(new DeleteObjectCommand({ Bucket, Key: `direct/${b.digest.slice(7)}` }));
      }
    }
  }
  process.stderr.write('figure                 round  backend MB/s (cpu client/ceph s)  direct MB/s (cpu client/ceph s)  ratio  steal%\n');
  for (const r of rows as Array<{ bench: string; round: number; backend: Figure; direct: Figure; ratio: number }>) {
    process.stderr.write(`${r.bench.padEnd(22)} ${String(r.round).padStart(5)}  ${String(r.backend.mbps).padStart(6)} (${r.backend.clientCpu}/${r.backend.cephCpu})`.padEnd(64) +
      `${String(r.direct.mbps).padStart(6)} (${r.direct.clientCpu}/${r.direct.cephCpu})`.padEnd(33) + `${r.ratio}  ${r.backend.stealPct}/${r.direct.stealPct}\n`);
  }
  client.destroy();
  await rgw.stop();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
