/**
 * Memory handed to a push as it needs it. Before each push workload the bench writes as many bytes
 * as the push will write into a file (through the page cache, then fdatasync, so no writeback is
 * left to run during the push) and keeps it; while the push runs, a worker thread watches the
 * guest's free memory (`MemFree` in /proc/meminfo, every 2 ms) and, whenever it came within a
 * step (16 MiB) of where it stood when the push began, shortens the file to bring it back a step
 * above. The push's
 * page cache (whichever server runs it) is so written into pages freed a few milliseconds before.
 *
 * Why not write and delete the file just before the push (what the bench did until 2026-12-07):
 * this VM reports free memory to the hypervisor (virtio-balloon free page reporting), which takes
 * the pages back; the next write to such a page faults in the host and costs the writer up to 2.5
 * s of CPU per GiB more. The kernel reports about 2 s after memory was freed, then about 260 MiB
 * every 2 s while any is left: 1 GiB freed at once before a push that lasts 1–4 s went back in
 * part or not at all depending on where that timer stood, a lottery between runs and between the
 * two servers (bench/README.md "The chunked push and memory the VM takes back"). Released in
 * steps as it is used, at most a step or two waits free at any moment.
 */
import { closeSync, ftruncateSync, fsyncSync, openSync, readFileSync, unlinkSync, writeSync, constants as fsc } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { randomFillSync } from 'node:crypto';
import { on } from 'node:events';

/** Bytes released at once: the free memory the handover keeps ahead of the push. */
const STEP = 16 * 1024 * 1024;
/** Milliseconds between two looks at the free memory. */
const POLL_MS = 2;
const BLOCK = 4 * 1024 * 1024;

/** What a handover did, for the bench's JSON and stderr. */
export interface HandoverResult {
  bench: 'memory_handover';
  /** Bytes written (and synced) before the push. */
  held_bytes: number;
  /** Bytes released while the push ran (the rest is released when it ends). */
  released_bytes: number;
  /** Seconds of CPU (this process) per GiB held, to write and sync the file. */
  write_cpu_s_per_gib: number;
  /** Milliseconds the write and sync took. */
  write_ms: number;
}

interface Start {
  path: string;
  bytes: number;
  stop: SharedArrayBuffer;
}

/** KiB of free memory in the guest (`MemFree`), or null where /proc/meminfo has none. */
function memFreeKib(): number | null {
  const m = /^MemFree:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) : null;
}

/** The worker: writes, syncs, reports ready, then releases until told to stop. */
function workerMain({ path, bytes, stop }: Start): void {
  const flag = new Int32Array(stop);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const block = Buffer.allocUnsafe(BLOCK);
  randomFillSync(block);
  const fd = openSync(path, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC, 0o600);
  for (let pos = 0; pos < bytes; pos += BLOCK) writeSync(fd, block, 0, Math.min(BLOCK, bytes - pos), pos);
  fsyncSync(fd);
  const c = process.cpuUsage(c0);
  parentPort!.postMessage({ ready: true, write_cpu_s: (c.user + c.system) / 1e6, write_ms: performance.now() - t0 });
  const base = memFreeKib();
  let released = 0;
  while (base !== null && released < bytes && Atomics.wait(flag, 0, 0, POLL_MS) === 'timed-out') {
    const short = (base - (memFreeKib() ?? base)) * 1024 + STEP;
    if (short > 0) {
      released = Math.min(bytes, released + Math.ceil(short / STEP) * STEP);
      ftruncateSync(fd, bytes - released);
    }
  }
  if (released < bytes) Atomics.wait(flag, 0, 0);
  closeSync(fd);
  unlinkSync(path);
  parentPort!.postMessage({ done: true, released });
}

if (!isMainThread && (workerData as { handover?: Start } | null)?.handover) workerMain((workerData as { handover: Start }).handover);

/** A handover under way: `end()` once the push finished. */
export interface Handover {
  /** Stops releasing, deletes the file (freeing what is left) and says what was done. */
  end(): Promise<HandoverResult>;
}

/**
 * Writes `bytes` into `path` and holds them for the push that follows, releasing them as the
 * guest's free memory falls. Resolves once the file is written and synced.
 * @throws Error when the worker fails (the file cannot be written).
 */
export async function handOverMemory(path: string, bytes: number): Promise<Handover> {
  const stop = new SharedArrayBuffer(4);
  const worker = new Worker(new URL(import.meta.url), { workerData: { handover: { path, bytes, stop } } });
  // Messages buffered in order until read; an 'error' rejects the read, an exit ends the messages.
  const messages = on(worker, 'message', { close: ['exit'] });
  const next = async (): Promise<Record<string, number>> => {
    const m = await messages.next();
    if (m.done) throw new Error('memory handover worker exited before it answered');
    return (m.value as [Record<string, number>])[0];
  };
  const ready = await next();
  return {
    async end() {
      const flag = new Int32Array(stop);
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
      const done = await next();
      await worker.terminate();
      return {
        bench: 'memory_handover',
        held_bytes: bytes,
        released_bytes: done.released!,
        write_cpu_s_per_gib: Math.round((ready.write_cpu_s! / (bytes / 1024 ** 3)) * 100) / 100,
        write_ms: Math.round(ready.write_ms!),
      };
    },
  };
}
