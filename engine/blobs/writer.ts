/**
 * Streams one request's bytes into an upload session's blob writer (contract.ts `BlobWriter`)
 * while updating its sha256 (docs/architecture.md (Blob upload)).
 *
 * Bytes land in a small per-request pool of buffers (at most 4): either read there directly by
 * the transport (`region`/`commit`, the upload host's zero-copy path) or copied by `write`. A full
 * buffer is handed at the same time to the session's running hash (`feedHash`, possibly on
 * another thread) and to the session's vectored `write` (batched: every buffer filled while the
 * previous write ran goes in one call); it returns to the pool when both are done.
 * `write`/`commit` return false once every buffer is busy; the caller pauses its socket until
 * `onDrain`. Every 64 MiB (for a request that commits the blob right after its body, after 4 MiB
 * and then at intervals doubling to 64 MiB: `COMMITTING_SYNC_EVERY_BYTES`) a `sync` starts in the
 * background, unless the previous one still runs, so the final sync at commit has little left to do.
 *
 * Memory: the writer's buffers, their sizes and their reuse are writer-buffers.ts's.
 *
 * Lanes: with the server's body lanes (body-lanes.ts), a body past their bulk size reads only
 * while it holds a lane or has waited its longest wait: meanwhile `write`/`commit` return false
 * and the `onDrain` callback runs when the wait ends. `end` gives the lane back once the body's
 * buffers are back.
 *
 * Failure: once the session failed (the blob store away, a disk error: its `write` rejected, or
 * its `feedHash` threw, as an S3 session's does once a part failed), `write` and `commit` throw
 * that error, so the transport stops reading the body and the request ends with it; a paused
 * caller is woken (`onDrain`) to learn it; buffers still queued give their memory back and
 * `flush` rejects. (Before, a buffer enqueued when `feedHash` threw kept its holds for good and
 * `flush` waited for it for ever: the request was never answered, docs/faults.md.)
 *
 * Integrity: the writer counts the bytes it accepted, handed to the hash and wrote to the session;
 * `end` rejects unless the three agree, so a session's recorded size is exactly what was hashed.
 * After `end` the writer accepts nothing more.
 */
import type { BlobWriter } from './contract.js';
import { unlimitedMemory, type UploadMemory } from './upload-memory.js';
import { RESUME_IN_FLIGHT, WriterBuffers } from './writer-buffers.js';
import type { BodyLanes, LaneTicket } from './body-lanes.js';

export { BUFFER_BYTES, POOL_BUFFERS, RESUME_IN_FLIGHT, STASH_LIMIT_BYTES, STASH_MS } from './writer-buffers.js';

/** Bytes written between background fdatasync calls (the default, for PATCH bodies). */
export const SYNC_EVERY_BYTES = 64 * 1024 * 1024;

/**
 * Bytes written between background fdatasync calls when the request commits the blob right after
 * its body (a monolithic POST, a PUT with a body): its commit waits for every byte to be synced
 * anyway, so syncing while the body still streams only moves disk work earlier. Without it the
 * page cache held all of a small blob's bytes until the commit (this machine starts writeback
 * only at gigabytes of dirty memory), and 16 concurrent 16 MiB pushes left the disk 37–80 % busy
 * second by second, queueing each blob's whole sync behind the others' at its end. Measured with
 * `push_concurrent` (16 × 16 MiB in flight, `/proc/diskstats` sampled), interleaved runs: 308–397
 * MB/s (median 354) with 64 MiB; 334–350 with 8 MiB and 342–366 with 4 MiB for every body (disk
 * 63–86 % busy); 349–396 (median 377) with this setting. A PATCH keeps 64 MiB: its `end`
 * waits for its own syncs, and at 4 MiB a 1 GiB push in 16 MiB PATCHes fell from 391–446 to
 * 333–394 MB/s. The interval doubles after each sync up to `SYNC_EVERY_BYTES`, so a large blob
 * pushed in one request still takes a handful of syncs per GiB, not 256.
 */
export const COMMITTING_SYNC_EVERY_BYTES = 4 * 1024 * 1024;

/** A filled buffer on its way to disk and through the hash. */
interface Slot {
  buf: Buffer;
  used: number;
  /** Outstanding holders (write, hash); the buffer is free again at 0. */
  holds: number;
  pooled: boolean;
}

/** One request's bytes into an upload session (see the file header). */
export class UploadWriter {
  readonly #blob: BlobWriter;
  readonly #memory: UploadMemory;
  readonly #start: number;
  #position: number;
  #accepted: number;
  #hashed: number;
  readonly #buffers: WriterBuffers;
  #current: Buffer | null = null;
  #currentPooled = true;
  #fill = 0;
  #queue: Slot[] = [];
  #inFlight = 0;
  #writing = false;
  #ended = false;
  #unsynced = 0;
  #syncs: Array<Promise<void>> = [];
  #syncEvery: number;
  /** A background sync of this writer is running. */
  #syncing = false;
  #error: Error | null = null;
  #drainWaiter: (() => void) | null = null;
  #idleWaiters: Array<(e: Error | null) => void> = [];
  /** The server's body lanes and this body's place in them (none: the body never waits for a lane). */
  readonly #lanes: BodyLanes | undefined;
  readonly #ticket: LaneTicket | undefined;
  readonly #commitsNext: boolean;

  /**
   * @param blob the session's writer; bytes go after its current `size`
   * @param memory the global upload buffer budget
   * @param commitsNext the request commits the blob right after this body: the first background
   *   sync comes after `COMMITTING_SYNC_EVERY_BYTES` (else `SYNC_EVERY_BYTES`; the interval
   *   doubles after each sync, up to `SYNC_EVERY_BYTES`), and at `end` its free buffers go to
   *   the process's pool, not to a stash for the session's next request
   * @param lanes the server's body lanes (body-lanes.ts): past their bulk size, this body reads
   *   only while it holds a lane or has waited for one long enough; none = never waits for one
   */
  constructor(blob: BlobWriter, memory: UploadMemory = unlimitedMemory(), commitsNext = false, lanes?: BodyLanes) {
    this.#syncEvery = commitsNext ? COMMITTING_SYNC_EVERY_BYTES : SYNC_EVERY_BYTES;
    this.#commitsNext = commitsNext;
    this.#lanes = lanes;
    this.#ticket = lanes?.ticket(() => this.#wake());
    const position = blob.size;
    this.#blob = blob;
    this.#start = position;
    this.#position = position;
    this.#accepted = position;
    this.#hashed = position;
    this.#memory = memory;
    this.#buffers = new WriterBuffers(blob, memory);
  }

  /** Bytes accepted so far, including the starting position. */
  get offset(): number {
    return this.#accepted;
  }

  /** Bytes handed to the running hash so far, including the starting position. */
  get hashed(): number {
    return this.#hashed;
  }

  /** Bytes written since the last background sync started (all of them once `end` resolved). */
  get unsyncedBytes(): number {
    return this.#unsynced;
  }

  /**
   * Whether another byte can be taken without exceeding the pool or the budget (overflow does not
   * count), and, past the lanes' bulk size, while this body may read (body-lanes.ts).
   */
  get #ready(): boolean {
    if (this.#ticket && !this.#lanes!.mayRead(this.#ticket, this.#accepted - this.#start)) return false;
    return (this.#current !== null && this.#currentPooled) || this.#buffers.canTake();
  }

  /** Makes `#current` a buffer to fill; with `overflow`, beyond the pool and budget when exhausted. */
  #take(overflow: number): boolean {
    if (this.#current) return true;
    const pooled = this.#buffers.take();
    if (pooled) {
      this.#current = pooled;
      this.#currentPooled = true;
    } else if (overflow > 0) {
      this.#current = this.#buffers.overflow(overflow);
      this.#currentPooled = false;
    } else {
      return false;
    }
    this.#fill = 0;
    return true;
  }

  /**
   * Accepts a chunk (copied; the caller may reuse it). Returns false when the caller should
   * pause until `onDrain`; chunks that still arrive go to temporary overflow buffers.
   * @throws the first write error (STORAGE_FULL for a full disk) once a write failed: the
   *   transport then stops the body and the request is answered with it.
   */
  write(chunk: Buffer): boolean {
    if (this.#error) throw this.#error;
    if (this.#ended) return false;
    this.#accepted += chunk.length;
    let off = 0;
    while (off < chunk.length) {
      this.#take(chunk.length - off);
      const n = chunk.copy(this.#current!, this.#fill, off);
      this.#fill += n;
      off += n;
      if (this.#fill === this.#current!.length) this.#enqueueCurrent();
    }
    return this.#ready;
  }

  /**
   * Zero-copy path (BodySink): the free part of the current pool buffer, for the transport to
   * read socket bytes into; null when every pool buffer is busy or the budget is spent.
   */
  region(): Buffer | null {
    if (this.#error || this.#ended || !this.#take(0)) return null;
    this.#buffers.lastRegion = this.#current;
    return this.#current!.subarray(this.#fill);
  }

  /**
   * The transport read its body to the end and holds no region any more (h1-connection.ts asks
   * for its next read buffer right after the read that completed the body, before any promise
   * settles), so the last region's buffer may be passed on to the session's next writer too.
   */
  regionsReturned(): void {
    this.#buffers.lastRegion = null;
  }

  /** `n` bytes were placed at the start of the last `region()`; same result (and error) as `write`. */
  commit(n: number): boolean {
    if (this.#error) throw this.#error;
    if (this.#ended || !this.#current) return false;
    this.#accepted += n;
    this.#fill += n;
    if (this.#fill === this.#current.length) this.#enqueueCurrent();
    return this.#ready;
  }

  /**
   * Registers the one callback to run when the writer can take bytes again: when a buffer is
   * free and at most `RESUME_IN_FLIGHT` are busy (or at once on an error or after `end`).
   */
  onDrain(cb: () => void): void {
    this.#drainWaiter = cb;
    // Failed or ended: resume at once, so the transport's next write or commit gets the error
    // (a socket paused for a writer that can never drain would hang the request).
    if (this.#error || this.#ended) queueMicrotask(() => this.#wake());
    else if (this.#inFlight === 0) this.#memory.wait(() => this.#wake());
  }

  #wake(): void {
    if (!this.#drainWaiter) return;
    // Waiting for a lane: the lanes call this again when the wait ends.
    if (this.#ticket?.state === 'waiting' && !this.#error && !this.#ended) return;
    if (this.#error || this.#ended || (this.#ready && this.#inFlight <= RESUME_IN_FLIGHT)) {
      const d = this.#drainWaiter;
      this.#drainWaiter = null;
      d();
    } else if (this.#inFlight === 0) {
      this.#memory.wait(() => this.#wake());
    }
  }

  /** Resolves when every accepted byte is written; rejects with the first write error. */
  flush(): Promise<void> {
    if (this.#error) return Promise.reject(this.#error);
    if (this.#current && this.#fill > 0) this.#enqueueCurrent();
    // The last buffer's hand-off may be what learns that the session failed (an S3 part that
    // failed while the body's tail arrived): the request ends with that error, not as if written.
    if (this.#error) return Promise.reject(this.#error);
    if (!this.#writing && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.#idleWaiters.push((e) => (e ? reject(e) : resolve())));
  }

  /**
   * Flushes, gives the buffers back, gives up the lane, waits for background syncs and suspends
   * the session's writer (it stays open for the next request). Nothing is accepted after it was
   * called. A body holding a lane keeps it until its last buffers are hashed, written and back in
   * the process's pool (a body that commits next) or its stash, so the next body in the lane takes
   * them instead of faulting in new pages: measured 2026-11-28, the first 16 concurrent pushes
   * after a start made 25 new 2 MiB buffers when the lane went at the start of `end` (the next
   * body grew its buffers while the last ones of this body were still being hashed and written),
   * against the 16 its four lanes of four buffers need.
   * @throws the first write error, or an Error when the bytes accepted, hashed and written differ.
   */
  async end(): Promise<void> {
    if (this.#ticket?.state === 'waiting') this.#lanes!.leave(this.#ticket); // holds no lane: out of the queue now
    try {
      await this.flush();
      this.#ended = true;
      this.#giveBack();
      await Promise.all(this.#syncs);
      if (this.#hashed !== this.#accepted || this.#position !== this.#accepted) {
        throw new Error(`upload writer out of step: accepted ${this.#accepted - this.#start}, hashed ${this.#hashed - this.#start}, written ${this.#position - this.#start} bytes`);
      }
    } finally {
      this.#ended = true;
      this.#giveBack();
      this.#blob.suspend();
    }
  }

  /**
   * Gives the free buffers back (to the process's pool for a body that commits next, else to the
   * session's stash), and the lane once no buffer is out. Buffers the hash or a write release
   * later follow on their own (`#release` after `#ended`), the last one giving up the lane.
   * Idempotent.
   */
  #giveBack(): void {
    if (this.#current) {
      this.#buffers.dropUnused(this.#current, this.#currentPooled);
      this.#current = null;
    }
    if (this.#commitsNext) this.#buffers.recycleFree();
    else this.#buffers.stashFree();
    this.#leaveLaneWhenBuffersBack();
  }

  #enqueueCurrent(): void {
    const buf = this.#current!;
    const slot: Slot = { buf, used: this.#fill, holds: 2, pooled: this.#currentPooled };
    if (this.#fill === buf.length) this.#buffers.filled(buf.length);
    this.#current = null;
    this.#fill = 0;
    this.#queue.push(slot);
    this.#inFlight++;
    this.#hashed += slot.used;
    try {
      this.#blob.feedHash(slot.buf.subarray(0, slot.used), () => this.#release(slot));
    } catch (e) {
      // The session failed (an S3 writer refuses bytes once a part failed): the hash never takes
      // this buffer, so its hold goes now, and `#pump` drops the queue.
      this.#error ??= e as Error;
      this.#release(slot);
    }
    this.#pump();
  }

  #release(slot: Slot): void {
    if (--slot.holds > 0) return;
    this.#inFlight--;
    this.#buffers.release(slot.buf, slot.pooled, this.#ended);
    if (this.#ended) this.#leaveLaneWhenBuffersBack();
    this.#wake();
  }

  /** After `end`: gives the lane up once no buffer is with the hash or a write any more. */
  #leaveLaneWhenBuffersBack(): void {
    if (this.#ticket && this.#inFlight === 0) this.#lanes!.leave(this.#ticket);
  }

  /**
   * Hands every queued buffer to the session's `write` (one call at a time). After an error
   * nothing more is written: the queued buffers' write holds go (their memory back to the
   * budget) and `flush` waiters learn the error. (Before, a buffer queued when the session
   * failed kept its hold for good: `flush`, so the request's end, waited for ever.)
   */
  #pump(): void {
    if (this.#writing) return;
    if (this.#error) {
      for (const s of this.#queue.splice(0)) this.#release(s);
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w(this.#error);
      return;
    }
    if (this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    const bytes = batch.reduce((n, s) => n + s.used, 0);
    this.#writing = true;
    this.#blob.write(batch.map((s) => s.buf.subarray(0, s.used))).then(() => this.#written(batch, bytes, null), (e: Error) => this.#written(batch, 0, e));
  }

  #written(batch: Slot[], bytes: number, err: Error | null): void {
    this.#writing = false;
    if (err && !this.#error) {
      this.#error = err;
      // Nothing more is written: the queued buffers' write holds are released now (their hash
      // holds when the hash has read them), so their memory goes back to the budget.
      batch = batch.concat(this.#queue.splice(0));
    }
    this.#position += bytes;
    this.#unsynced += bytes;
    if (this.#unsynced >= this.#syncEvery && !this.#error && !this.#syncing) {
      // One at a time: each covers every byte written before it, and syncs piling up behind a
      // slow disk would hold libuv's pool threads that reads and writes need.
      this.#unsynced = 0;
      if (this.#syncEvery < SYNC_EVERY_BYTES) this.#syncEvery = Math.min(SYNC_EVERY_BYTES, this.#syncEvery * 2);
      this.#syncing = true;
      this.#syncs.push(this.#blob.sync().catch(() => {}).then(() => { this.#syncing = false; })); // a failed sync fails the commit (fs-writer.ts)
    }
    for (const s of batch) this.#release(s);
    // A paused transport learns the error now, not when the buffers' hash holds come back (a
    // hash that lags, or one that waited on the same hung disk, would hold the request past the
    // disk deadline: bench/README.md "Hashing a buffer in the thread that writes it").
    if (err) this.#wake();
    if (!this.#error && this.#queue.length === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w(null);
    }
    this.#pump();
  }
}
