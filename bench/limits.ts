/**
 * The machine's limits for moving blob bytes, measured in the same run as the workloads (so
 * the figures can be read as a fraction of what this machine can do at that moment):
 *
 * - `disk_write_direct`: 1 GiB written with `O_DIRECT` in 4 MiB blocks, then `fdatasync` (the
 *   disk's own pace, without the page cache);
 * - `disk_read_direct`: that file read back with `O_DIRECT`, 4 MiB blocks, three in flight (not
 *   in the page cache: the pace of Slipway's pull of a blob it has not written or pulled lately,
 *   engine/blobs/fs-reader.ts);
 * - `disk_read_direct_concurrent`: `count` files of `size` (the concurrent pull's 16 × 64 MiB)
 *   written with `O_DIRECT`, then all read at once with `O_DIRECT`, 4 MiB reads, two in flight
 *   per file, the fastest of three rounds (what the filesystem store does for 16 direct pulls at
 *   once: engine/blobs/fs-reader.ts lends one buffer to the socket and reads one ahead); libuv's
 *   pool (4 threads here as in the server) runs the reads;
 * - `disk_read_buffered_cold`: the same file read through the page cache the first time;
 * - `page_cache_read`: read again, now from the page cache;
 * - `buffered_write_sync`: 1 GiB written through the page cache, then `fdatasync`: how Slipway's
 *   filesystem store writes pushed bytes (engine/blobs/fs-writer.ts); its CPU per GiB is the
 *   kernel's copy into the cache and the writeback;
 * - `disk_write_sync_concurrent`: the concurrent push's files (`count` of `size`, `inFlight` at
 *   once: 64 × 16 MiB, 16 at a time) each written through the page cache in 2 MiB writes (the
 *   upload writer's buffer size) and `fdatasync`ed before its slot starts the next file, the
 *   fastest of three rounds (the first pays for page-cache memory the guest has not touched
 *   lately): what the disk takes in the shape of `push_concurrent`, each blob synced before it
 *   is acknowledged; libuv's pool (4 threads, as in the server) runs the writes;
 * - `loopback`: 1 GiB over a TCP connection on 127.0.0.1 to a child process (python3, reads of
 *   4 MiB) that discards it.
 *
 * CPU is this process's utime+stime (all threads, so libuv's pool that runs the file I/O counts);
 * the kernel's own writeback threads are not charged to any process.
 */
import { spawn } from 'node:child_process';
import { constants as fsc, promises as fsp } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomFillSync } from 'node:crypto';
import { sharedBuffer } from '../engine/blobs/aligned-buffer.js';
import { fastestRound, mbPerSecond, percentile, round } from './stats.js';

const BLOCK = 4 * 1024 * 1024;
const GiB = 1024 ** 3;

/** One limit: wall-clock speed and CPU seconds per GiB of this process. */
export interface Limit {
  bench: string;
  value: number;
  unit: 'MB/s';
  cpu_seconds_per_gib: number;
  system_seconds_per_gib: number;
  note: string;
  /** MB/s of every round, for limits measured in several (the figure is the fastest's). */
  rounds_mb_s?: number[];
}

/** Runs `fn` over `bytes` and returns its speed and CPU per GiB. */
async function timed(bench: string, bytes: number, note: string, fn: () => Promise<void>): Promise<Limit> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const per = (us: number) => round(us / 1e6 / (bytes / GiB), 2);
  return { bench, value: mbPerSecond(bytes, ms), unit: 'MB/s', cpu_seconds_per_gib: per(c.user + c.system), system_seconds_per_gib: per(c.system), note };
}

/** Writes `bytes` of `block` repeated to `path` through a handle opened with `flags`, then fdatasync (unless `sync` is false). */
async function writeFile(path: string, flags: number, block: Buffer, bytes: number, sync = true): Promise<void> {
  const h = await fsp.open(path, flags, 0o600);
  try {
    for (let pos = 0; pos < bytes; pos += block.length) await h.write(block, 0, block.length, pos);
    if (sync) await h.datasync();
  } finally {
    await h.close();
  }
}

/** Reads `path` whole in blocks of `buffers[i]`, `buffers.length` reads in flight. */
async function readFile(path: string, flags: number, buffers: Buffer[], bytes: number): Promise<void> {
  const h = await fsp.open(path, flags);
  try {
    let next = 0;
    await Promise.all(buffers.map(async (b) => {
      while (next < bytes) {
        const at = next;
        next += b.length;
        await h.read(b, 0, b.length, at);
      }
    }));
  } finally {
    await h.close();
  }
}

/** Sends `bytes` over loopback TCP to a child process that discards them. */
async function loopback(block: Buffer, bytes: number): Promise<void> {
  // The receiver reads into one 4 MiB buffer (python3's recv_into), so it costs one system call
  // per socket read and does not become the limit the way a 64 KiB-per-read Node receiver would.
  const child = spawn('python3', ['-c', [
    'import socket, sys',
    's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)',
    'print(s.getsockname()[1], flush=True)',
    'c, _ = s.accept(); b = bytearray(4 << 20); n = 0',
    'while True:',
    '    k = c.recv_into(b)',
    '    if k == 0: break',
    '    n += k',
    'c.sendall(str(n).encode()); c.close()',
  ].join('\n')], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      child.once('exit', () => reject(new Error('loopback receiver exited')));
    });
    await new Promise<void>((resolve, reject) => {
      const sock = connect(port, '127.0.0.1');
      let sent = 0;
      const pump = () => {
        while (sent < bytes) {
          sent += block.length;
          if (!sock.write(block)) return;
        }
        sock.end();
      };
      sock.on('connect', pump);
      sock.on('drain', pump);
      sock.on('error', reject);
      sock.on('data', () => resolve());
    });
  } finally {
    child.kill();
  }
}

/** Rounds of the concurrent direct read; the fastest counts (contention only ever slows a round). */
const READ_ROUNDS = 3;

/**
 * The disk limit of a push workload among `limits`: for the concurrent pushes the same files
 * written and synced as many at once (`disk_write_sync_concurrent`) when it was measured, else
 * (and for every other push) one file written and synced (`buffered_write_sync`).
 */
export function pushDiskLimit(limits: Limit[], concurrent: boolean): Limit | undefined {
  return (concurrent ? limits.find((l) => l.bench === 'disk_write_sync_concurrent') : undefined) ?? limits.find((l) => l.bench === 'buffered_write_sync');
}

/** Files of the concurrent-pull limit: how many, and bytes each (a multiple of 4 MiB). */
export interface ConcurrentFiles {
  count: number;
  size: number;
}

/** Writes `files` direct files under `dir`, then reads them all at once with `O_DIRECT` (see the header). */
async function concurrentDirect(dir: string, files: ConcurrentFiles, block: Buffer): Promise<Limit> {
  const paths = Array.from({ length: files.count }, (_, i) => join(dir, `pull-${i}`));
  try {
    for (const p of paths) await writeFile(p, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_DIRECT, block, files.size);
    const buffers = paths.map(() => [sharedBuffer(BLOCK), sharedBuffer(BLOCK)]);
    const note = `${files.count} files of ${files.size / 2 ** 20} MiB written with O_DIRECT, then read all at once with O_DIRECT, 4 MiB reads, 2 in flight per file (fastest of ${READ_ROUNDS} rounds): 16 pulls at once of blobs not in the page cache`;
    const rounds: Limit[] = [];
    for (let i = 0; i < READ_ROUNDS; i++) {
      // Direct reads leave the page cache alone, so every round reads the disk.
      rounds.push(await timed('disk_read_direct_concurrent', files.count * files.size, note, () => Promise.all(paths.map((p, j) => readFile(p, fsc.O_RDONLY | fsc.O_DIRECT, buffers[j]!, files.size))).then(() => {})));
    }
    return fastestRound(rounds);
  } finally {
    for (const p of paths) await fsp.rm(p, { force: true });
  }
}

/** Files of the concurrent-push limit: how many, bytes each (a multiple of 2 MiB), and how many at once. */
export interface ConcurrentPushes extends ConcurrentFiles {
  inFlight: number;
}

/** Bytes of each write of the concurrent-push limit: the upload writer's buffer (engine/blobs/writer-buffers.ts). */
const PUSH_WRITE = 2 * 1024 * 1024;

/** Writes and syncs `files` under `dir`, `inFlight` at a time, in rounds (see the header). */
async function concurrentSyncedWrites(dir: string, files: ConcurrentPushes, block: Buffer): Promise<Limit> {
  const paths = Array.from({ length: files.count }, (_, i) => join(dir, `push-${i}`));
  const write = block.subarray(0, PUSH_WRITE);
  const note = `${files.count} files of ${files.size / 2 ** 20} MiB, ${files.inFlight} at a time, each written through the page cache in 2 MiB writes and fdatasynced (fastest of ${READ_ROUNDS} rounds): the disk in the shape of push_concurrent`;
  const rounds: Limit[] = [];
  try {
    for (let i = 0; i < READ_ROUNDS; i++) {
      let next = 0;
      rounds.push(await timed('disk_write_sync_concurrent', files.count * files.size, note, () => Promise.all(Array.from({ length: files.inFlight }, async () => {
        while (next < paths.length) await writeFile(paths[next++]!, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC, write, files.size);
      })).then(() => {})));
      for (const p of paths) await fsp.rm(p, { force: true });
    }
    return fastestRound(rounds);
  } finally {
    for (const p of paths) await fsp.rm(p, { force: true });
  }
}

/**
 * Measures every limit over `bytes` (a multiple of 4 MiB) in the temp dir; with `concurrent` the
 * concurrent direct read of that many files, with `pushes` the concurrent synced writes of those
 * files; removes its files.
 */
export async function measureLimits(bytes: number, concurrent?: ConcurrentFiles, pushes?: ConcurrentPushes): Promise<Limit[]> {
  const dir = await fsp.mkdtemp(join(tmpdir(), 'slipway-bench-limits-'));
  const block = sharedBuffer(BLOCK);
  randomFillSync(block);
  const direct = join(dir, 'direct');
  const buffered = join(dir, 'buffered');
  const out: Limit[] = [];
  try {
    const create = fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC;
    out.push(await timed('disk_write_direct', bytes, 'O_DIRECT writes of 4 MiB, then fdatasync: the disk without the page cache', () => writeFile(direct, create | fsc.O_DIRECT, block, bytes)));
    const reads = [sharedBuffer(BLOCK), sharedBuffer(BLOCK), sharedBuffer(BLOCK)];
    out.push(await timed('disk_read_direct', bytes, 'O_DIRECT reads of 4 MiB, 3 in flight, of a file not in the page cache: a pull of a blob not in the cache', () => readFile(direct, fsc.O_RDONLY | fsc.O_DIRECT, reads, bytes)));
    if (concurrent) out.push(await concurrentDirect(dir, concurrent, block));
    out.push(await timed('disk_read_buffered_cold', bytes, 'the same file read through the page cache the first time (4 MiB reads)', () => readFile(direct, fsc.O_RDONLY, [reads[0]!], bytes)));
    out.push(await timed('page_cache_read', bytes, 'read again, from the page cache (4 MiB reads): where pulls right after a push read from', () => readFile(direct, fsc.O_RDONLY, [reads[0]!], bytes)));
    await fsp.rm(direct, { force: true });
    out.push(await timed('buffered_write_sync', bytes, 'written through the page cache in 4 MiB writes, then fdatasync: how pushed bytes are stored', () => writeFile(buffered, create, block, bytes)));
    await fsp.rm(buffered, { force: true });
    if (pushes) out.push(await concurrentSyncedWrites(dir, pushes, block));
    out.push(await timed('loopback', bytes, 'TCP on 127.0.0.1, 4 MiB writes, to a python3 process discarding them (4 MiB reads)', () => loopback(block, bytes)));
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
  return out;
}

/** What the first touch of a page of new memory costs this machine's CPU. */
export interface FirstTouch {
  bench: 'limit_first_touch';
  /** CPU microseconds per 4 KiB page (median of `rounds`). */
  value: number;
  unit: 'µs/page';
  rounds_us_per_page: number[];
  note: string;
}

/**
 * Times the first write to each 4 KiB page of `mib` MiB of new shared buffers (how the servers'
 * receive buffers are made, aligned-buffer.ts), as this process's CPU time per page, `rounds`
 * times, each round in new buffers. A server that faults in fresh memory during a workload pays
 * this per page: the bench prints each burst's minor page faults beside it, and their cost at
 * this rate (bench/README.md "The first burst after a start").
 */
export function measureFirstTouch(mib = 64, rounds = 3): FirstTouch {
  const page = 4096;
  const per: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage();
    const buffers: Buffer[] = [];
    for (let i = 0; i < mib / 2; i++) {
      const b = Buffer.from(new SharedArrayBuffer(2 * 1024 * 1024));
      for (let o = 0; o < b.length; o += page) b[o] = 1;
      buffers.push(b);
    }
    const c = process.cpuUsage(c0);
    per.push(round((c.user + c.system) / ((mib * 1024 * 1024) / page), 2));
  }
  return { bench: 'limit_first_touch', value: percentile(Float64Array.from(per), per.length, 50), unit: 'µs/page', rounds_us_per_page: per, note: `the first write to each page of ${mib} MiB of new shared buffers, CPU per page (median of ${rounds} rounds): what each of a server's minor page faults costs here` };
}

/** How long one durable commit of a few bytes takes on this disk: p50 and p99 over `rounds` (ms). */
export interface SyncLatency {
  bench: 'limit_disk_sync_latency';
  value: number;
  unit: 'ms';
  p99: number;
  rounds: number;
  note: string;
}

/**
 * Times `rounds` rounds of a 4 KiB write at offset 0 and an `fdatasync` of a file in the temp dir
 * (the servers' file system): the least any durable metadata commit waits here (an LMDB commit
 * writes its pages and syncs once). Slipway acknowledges a manifest PUT only after such a sync;
 * the reference registry does not sync, so the warm push's p50 carries this wait on one side only.
 */
export async function measureSyncLatency(rounds = 200): Promise<SyncLatency> {
  const dir = await fsp.mkdtemp(join(tmpdir(), 'slipway-bench-sync-'));
  const block = Buffer.alloc(4096, 1);
  const ms: number[] = [];
  try {
    const h = await fsp.open(join(dir, 'commit'), fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC, 0o600);
    try {
      for (let i = 0; i < rounds; i++) {
        const t0 = performance.now();
        await h.write(block, 0, block.length, 0);
        await h.datasync();
        ms.push(performance.now() - t0);
      }
    } finally {
      await h.close();
    }
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => round(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!, 3);
  return { bench: 'limit_disk_sync_latency', value: at(0.5), unit: 'ms', p99: at(0.99), rounds, note: 'a 4 KiB write and fdatasync, one after the other: the least a durable commit waits on this disk (p50; p99 beside it)' };
}
