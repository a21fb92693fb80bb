/**
 * Running sha256 of upload sessions on a dedicated thread, so hashing (about 1 s of CPU per GiB
 * on this machine) runs beside receiving and writing instead of after them on the event loop:
 * measured on a 1 GiB PATCH, 403 → 511 MB/s for the same CPU. Buffers cross as
 * SharedArrayBuffers (the upload writer's pool), never copied. One thread serves every session;
 * each session's updates are hashed in the order sent.
 *
 * If the thread dies, every hash it held reports lost (`digest()` → null) and the session is
 * re-hashed from its file at completion; a new thread starts for new sessions.
 */
import { Worker } from 'node:worker_threads';
import type { HashFactory, RunningHash } from '../engine/blobs/running-hash.js';
import { inlineHash } from '../engine/blobs/running-hash.js';
import { HASH_THREAD_RESOURCE_LIMITS } from '../server/runtime-flags.js';

type Reply = { seq: number; hex?: string | null };

/** The hash thread's main-side handle: `create` makes running hashes, `close` stops it. */
export class HashThread {
  #worker: Worker | null = null;
  #generation = 0;
  #nextId = 1;
  #nextSeq = 1;
  readonly #waiting = new Map<number, (reply: Reply | null) => void>();
  #closed = false;

  /** Factory for Uploads: a running hash on this thread's worker. */
  readonly create: HashFactory = () => this.#open();

  /**
   * Starts the thread now instead of at the first upload's first bytes (`slipway serve` calls
   * it at start-up). A lazy start put the isolate's start-up, about 0.1 s of CPU and 11 MiB of
   * new pages, into the first push after a start: 1.75–1.81 CPU-s per GiB for a first 1 GiB
   * push against 1.62–1.64 once the thread ran (bench/README.md). A readiness probe
   * (server/ops/readiness.ts) started it anyway. No effect once closed.
   */
  start(): void {
    if (!this.#closed) this.#start();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL('./hash-thread-worker.js', import.meta.url), { resourceLimits: HASH_THREAD_RESOURCE_LIMITS });
    worker.unref();
    const generation = ++this.#generation;
    worker.on('message', (r: Reply) => {
      const cb = this.#waiting.get(r.seq);
      this.#waiting.delete(r.seq);
      cb?.(r);
    });
    const lost = () => {
      if (this.#generation !== generation) return;
      this.#worker = null;
      this.#generation++;
      const waiting = [...this.#waiting.values()];
      this.#waiting.clear();
      for (const cb of waiting) cb(null);
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    this.#worker = worker;
    return worker;
  }

  #send(message: { op: string; id: number; seq?: number; [field: string]: unknown }, onReply?: (r: Reply | null) => void): void {
    const worker = this.#start();
    if (onReply) this.#waiting.set(message.seq!, onReply);
    worker.postMessage(message);
  }

  #open(): RunningHash {
    if (this.#closed) return inlineHash();
    this.#start();
    const id = this.#nextId++;
    const generation = this.#generation;
    let lost = false;
    const alive = () => !lost && this.#generation === generation && this.#worker !== null;
    return {
      update: (bytes, done) => {
        const sab = bytes.buffer;
        if (!alive() || !(sab instanceof SharedArrayBuffer)) {
          lost = true; // not shareable: give up the running state, the file is re-hashed
          return done();
        }
        const seq = this.#nextSeq++;
        this.#send({ op: 'update', id, sab, offset: bytes.byteOffset, length: bytes.length, seq }, (r) => {
          if (!r) lost = true;
          done();
        });
      },
      digest: () => {
        if (!alive()) return Promise.resolve(null);
        const seq = this.#nextSeq++;
        return new Promise((resolve) => this.#send({ op: 'digest', id, seq }, (r) => resolve(r?.hex ?? null)));
      },
      discard: () => {
        if (alive()) this.#send({ op: 'drop', id });
        lost = true;
      },
    };
  }

  /** Stops the thread; running hashes report lost, new ones hash inline. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    if (worker) await worker.terminate();
  }
}
