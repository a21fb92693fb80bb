/**
 * Running sha256 of upload sessions on a dedicated thread, so hashing (about 1 s of CPU per GiB
 * on this machine) runs beside receiving and writing instead of after them on the event loop:
 * measured on a 1 GiB PATCH, 403 → 511 MB/s for the same CPU. Buffers cross as
 * SharedArrayBuffers (the upload writer's pool), never copied. One thread serves every session;
 * each session's updates are hashed in the order sent.
 *
 * If the thread dies, every hash it held reports lost (`digest()` → null) and the session is
 * re-hashed from its file at completion; a new thread starts for new sessions.
 *
 * Balanced (`balance`, the server's setting): while other sessions hash on the thread, a new
 * session hashes on the calling (main) thread instead, so that about as many sessions hash here
 * as there: each session's place is chosen at its first bytes (`runsHere` or `update`), here
 * when fewer sessions hash here than on the thread, and kept until its digest or discard. A
 * session hashed here is fed each read's bytes as they arrive (engine/blobs/writer.ts), while
 * they are in the CPU's caches: sha256 costs about 0.55 CPU-s per GiB on such bytes against
 * 0.8–0.9 on the thread during 16 concurrent pushes, where a 2 MiB buffer waits 8–15 ms in the
 * thread's queue behind other sessions' bytes (bench/README.md "Hashing a buffer while it
 * fills"). A lone push keeps the thread, hashing beside the main thread's reads. Measured first
 * with the least storing server (bench/storing-limit.ts), then in Slipway: bench/README.md
 * "Hashing where the bytes are".
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
  readonly #balance: boolean;
  /** Balanced sessions placed on the thread, and on the calling thread, not yet digested or discarded. */
  #onThread = 0;
  #here = 0;

  /**
   * @param options.balance place each new session on this thread or the calling thread, as
   *   many on each (see the file header); default false: every session on this thread
   */
  constructor(options: { balance?: boolean } = {}) {
    this.#balance = options.balance ?? false;
  }

  /** Factory for Uploads: a running hash on this thread's worker, or placed by the balance. */
  readonly create: HashFactory = () => (this.#balance && !this.#closed ? this.#balanced() : this.#open());

  /** Balanced sessions hashing on the thread and on the calling thread now. */
  get placed(): { onThread: number; here: number } {
    return { onThread: this.#onThread, here: this.#here };
  }

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

  /** A hash placed at its first bytes: here when fewer sessions hash here than on the thread. */
  #balanced(): RunningHash {
    let chosen: RunningHash | null = null;
    let here = false;
    let open = true;
    const place = (): RunningHash => {
      if (!chosen) {
        here = this.#here < this.#onThread;
        if (here) this.#here++;
        else this.#onThread++;
        chosen = here ? inlineHash() : this.#open();
      }
      return chosen;
    };
    const end = () => {
      if (!open) return;
      open = false;
      if (!chosen) return;
      if (here) this.#here--;
      else this.#onThread--;
    };
    return {
      update: (bytes, done) => place().update(bytes, done),
      digest: () => {
        const h = chosen ?? inlineHash(); // no bytes: nothing to send anywhere
        end();
        return h.digest();
      },
      discard: () => {
        chosen?.discard();
        end();
      },
      runsHere: () => {
        place();
        return here;
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
