/**
 * Running sha256 of upload sessions on dedicated threads, so hashing (about 0.55 s of CPU per GiB
 * on this machine, bytes in the caches) runs beside receiving and writing instead of after them
 * on the event loop: measured on a 1 GiB PATCH, 403 → 511 MB/s for the same CPU. Buffers cross as
 * SharedArrayBuffers (the upload writer's pool), never copied. Each session's updates are hashed
 * in the order sent, on one thread.
 *
 * `HashThreads` runs up to one thread per CPU, at most `MAX_HASH_THREADS`, and gives a session to
 * the least busy one (the others start only once two sessions are busy at once). While several sessions have bytes on the threads, a session's writer may hand its
 * buffers to `hashAndWrite` instead (fs-writer.ts): the thread hashes each buffer and then writes
 * it with `pwrite`, so the write reads bytes the hash just brought into the caches, where a
 * separate hash lagged 8–15 ms behind the socket in a 16-push burst and read them cold.
 * Measured (docs/storage.md "Hash threads, and hashing where the bytes are written"): the first
 * burst of 16 pushes about 5 % faster (medians of five runs) for ~0.1 CPU-s/GiB less; with one
 * session, hashing and writing in parallel on two threads is faster, so a lone session keeps that.
 *
 * If a thread dies, every hash it held reports lost (`digest()` → null) and the session is
 * re-hashed from its file at completion; a new thread starts for new sessions.
 */
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import type { HashFactory, HashWritePart, RunningHash } from '../engine/blobs/running-hash.js';
import { inlineHash, lostHash } from '../engine/blobs/running-hash.js';
import { HASH_THREAD_RESOURCE_LIMITS } from '../server/runtime-flags.js';

type Reply = { seq: number; hex?: string | null; written?: number; error?: { code?: string; message: string } };

/** Threads `HashThreads` starts at most (two measured best on two CPUs: docs/storage.md "Hash threads"). */
export const MAX_HASH_THREADS = 2;

/**
 * Sessions with bytes on a pool's hash threads (sent and not yet answered): a session prefers
 * `hashAndWrite` while another one has some.
 */
class Activity {
  busy = 0;
}

/** One hash thread's main-side handle: `create` makes running hashes, `close` stops it. */
export class HashThread {
  readonly #activity: Activity;
  #worker: Worker | null = null;
  #generation = 0;
  #nextId = 1;
  #nextSeq = 1;
  readonly #waiting = new Map<number, (reply: Reply | null) => void>();
  #closed = false;
  /** Sessions of this thread with bytes sent and not answered. */
  busySessions = 0;

  /** @param activity shared by the threads of one pool (default: this thread's own) */
  constructor(activity: Activity = new Activity()) {
    this.#activity = activity;
  }

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
    const activity = this.#activity;
    let lost = false;
    /** Messages of this session sent and not answered. */
    let outstanding = 0;
    const alive = () => !lost && this.#generation === generation && this.#worker !== null;
    const sent = () => {
      if (outstanding++ > 0) return;
      activity.busy++;
      this.busySessions++;
    };
    const answered = () => {
      if (--outstanding > 0) return;
      activity.busy--;
      this.busySessions--;
    };
    return {
      update: (bytes, done) => {
        const sab = bytes.buffer;
        if (!alive() || !(sab instanceof SharedArrayBuffer)) {
          lost = true; // not shareable: give up the running state, the file is re-hashed
          return done();
        }
        const seq = this.#nextSeq++;
        sent();
        this.#send({ op: 'update', id, sab, offset: bytes.byteOffset, length: bytes.length, seq }, (r) => {
          answered();
          if (!r) lost = true;
          done();
        });
      },
      prefersHashAndWrite: () => alive() && activity.busy - (outstanding > 0 ? 1 : 0) > 0,
      hashAndWrite: (parts: readonly HashWritePart[], fd: number, position: number) => {
        if (!alive() || parts.some((p) => !(p.bytes.buffer instanceof SharedArrayBuffer))) {
          lost = true;
          return Promise.resolve(null);
        }
        const seq = this.#nextSeq++;
        const message = parts.map((p) => ({ sab: p.bytes.buffer as SharedArrayBuffer, offset: p.bytes.byteOffset, length: p.bytes.byteLength, hash: p.hash }));
        sent();
        return new Promise<number | null>((resolve, reject) => this.#send({ op: 'write', id, parts: message, fd, position, seq }, (r) => {
          answered();
          if (!r) {
            lost = true;
            return resolve(null);
          }
          if (!r.error) return resolve(r.written!);
          reject(Object.assign(new Error(r.error.message), { written: r.written ?? 0 }, r.error.code ? { code: r.error.code } : {}));
        }));
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

/**
 * The server's hash threads: up to one per CPU, at most `MAX_HASH_THREADS` (see the file header).
 * A session's hash is bound to a thread when its first bytes come (a burst's sessions are all
 * opened before any of them sends bytes): to the first thread while no session is busy on any,
 * else to the thread with the fewest busy sessions (the first of those after the last one
 * chosen). A thread other than the first starts when its first session is bound to it, so a
 * server that never takes two pushes at once keeps one thread's memory (an isolate: about
 * 14 MiB here); once started it stays. Same interface as one `HashThread`.
 */
export class HashThreads {
  readonly #threads: HashThread[];
  readonly #activity = new Activity();
  #last = 0;

  /** @param count threads (default: the CPUs Node.js may use, at most MAX_HASH_THREADS) */
  constructor(count: number = Math.min(MAX_HASH_THREADS, availableParallelism())) {
    this.#threads = Array.from({ length: Math.max(1, count) }, () => new HashThread(this.#activity));
  }

  /** The thread for a session whose first bytes come now (see the class comment). */
  #pick(): HashThread {
    if (this.#activity.busy === 0) return this.#threads[0]!;
    const n = this.#threads.length;
    let pick = (this.#last + 1) % n;
    for (let k = 2; k <= n; k++) {
      const i = (this.#last + k) % n;
      if (this.#threads[i]!.busySessions < this.#threads[pick]!.busySessions) pick = i;
    }
    this.#last = pick;
    return this.#threads[pick]!;
  }

  /** Factory for Uploads: a running hash bound to a thread at its first use. */
  readonly create: HashFactory = () => {
    let inner: RunningHash | null = null;
    const bound = (): RunningHash => (inner ??= this.#pick().create());
    return {
      update: (bytes, done) => bound().update(bytes, done),
      prefersHashAndWrite: () => (inner ? (inner.prefersHashAndWrite?.() ?? false) : this.#activity.busy > 0),
      hashAndWrite: (parts, fd, position) => {
        const h = bound();
        if (h.hashAndWrite) return h.hashAndWrite(parts, fd, position);
        // Bound after the threads closed (an inline hash): these bytes go unhashed, so the state is lost.
        h.discard();
        inner = lostHash();
        return Promise.resolve(null);
      },
      digest: () => bound().digest(),
      discard: () => inner?.discard(),
    };
  };

  /** Starts the first thread now (HashThread.start); the others start when first used. */
  start(): void {
    this.#threads[0]!.start();
  }

  /** Stops every thread (HashThread.close). */
  async close(): Promise<void> {
    await Promise.all(this.#threads.map((t) => t.close()));
  }
}
