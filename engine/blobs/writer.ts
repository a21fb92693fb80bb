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
 * `onDrain`. Every 64 MiB a `sync` starts in the background (unless the previous one still runs)
 * so the final sync at commit has little left to do.
 *
 * Memory follows the bytes received, not the number of sessions: the first buffer is 4 KiB and
 * each one that fills up makes the next four times larger, up to 4 MiB (a free buffer that was
 * outgrown is swapped for a larger one when the budget allows), so a trickling session holds
 * 4 KiB while a fast one soon cycles four 4 MiB buffers (4 MiB rather than 1 MiB halved the
 * event loop's CPU per GiB pushed: a quarter of the hand-offs to the hash thread and the disk,
 * of the wake-ups and of the socket pauses; peak RSS of a 1 GiB push 97 → 110 MiB). Every buffer is taken from the global
 * `UploadMemory` budget and given back when dropped (at `end` at the latest); when the budget is
 * spent the writer asks for a pause and resumes when memory is given back.
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
 *
 * Buffers are SharedArrayBuffer-backed so a hash thread reads them without a copy; from 64 KiB on
 * they are page-aligned (aligned-buffer.ts), so a backend may write them with `O_DIRECT` (the
 * filesystem backend writes through the page cache, fs-writer.ts). A buffer
 * serves one session at a time (only its bytes `[0, fill)` are ever read), and is never passed on
 * at all when a socket may still hold a region of it: a socket only ever holds the region of the writer's last `region()` call (a body cut
 * off mid-read; after a body read to the end, `regionsReturned`), and only that dead writer's
 * memory may receive such stray bytes. The other free buffers of a finished writer are kept for a
 * second for the same session's next writer (the next PATCH of a chunked upload), outside the
 * budget and under a global limit; that writer uses them instead of new buffers of the same size
 * (it grows as a new one, except that after a request whose buffers reached full size it starts
 * at full size), because faulting in fresh buffer pages for every 16 MiB PATCH cost more CPU
 * than the rest of the request. Every other buffer a writer drops goes to the process's pool of
 * shared buffers (aligned-buffer.ts `recycleShared`), from which any later writer takes buffers
 * of the same size: shared memory left to the garbage collector stays mapped (the S3 bench's
 * 64 × 16 MiB push reached ~1 GiB RSS that way).
 */
import type { BlobWriter } from './contract.js';
import { MIN_BUFFER_BYTES, unlimitedMemory, type UploadMemory } from './upload-memory.js';
import { recycleShared, sharedBuffer } from './aligned-buffer.js';
import { bufferStashes, type Stash } from './buffer-stash.js';

/** Size of the largest pool buffer (bytes). */
export const BUFFER_BYTES = 4 * 1024 * 1024;
/** Buffers per writer: the most bytes in flight before the caller is asked to pause. */
export const POOL_BUFFERS = 4;
/**
 * A paused writer asks to resume only once at most this many buffers are still being hashed or
 * written, so each pause of the socket is followed by at least two buffers' worth of reads
 * (every pause and resume costs the event loop two epoll_ctl calls and a wake-up).
 */
export const RESUME_IN_FLIGHT = POOL_BUFFERS / 2;
/** Bytes written between background fdatasync calls. */
export const SYNC_EVERY_BYTES = 64 * 1024 * 1024;

/** How long a session keeps its finished writer's free buffers for its next request (ms). */
export const STASH_MS = 1000;
/**
 * Most bytes of buffers kept for next requests, all sessions together, outside the budget: in
 * stashes, and adopted by a next writer but not yet used by it.
 */
export const STASH_LIMIT_BYTES = 2 * POOL_BUFFERS * BUFFER_BYTES;

const stashes = bufferStashes(STASH_LIMIT_BYTES, STASH_MS);

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
  readonly #free: Buffer[] = [];
  #allocated = 0;
  #nextSize = MIN_BUFFER_BYTES;
  #current: Buffer | null = null;
  #currentPooled = true;
  #fill = 0;
  #queue: Slot[] = [];
  #inFlight = 0;
  #writing = false;
  #ended = false;
  #unsynced = 0;
  #syncs: Array<Promise<void>> = [];
  /** A background sync of this writer is running. */
  #syncing = false;
  #error: Error | null = null;
  #drainWaiter: (() => void) | null = null;
  #idleWaiters: Array<(e: Error | null) => void> = [];
  /** The buffer of the last `region()`: a socket may still read into it, so it is never stashed. */
  #lastRegion: Buffer | null = null;
  /** Where this writer leaves its free buffers once ended. */
  #stash: Stash | null = null;
  /** Buffers the session's previous writer left: used instead of new ones of the same size. */
  #reuse: Buffer[] = [];

  /**
   * @param blob the session's writer; bytes go after its current `size`
   * @param memory the global upload buffer budget
   */
  constructor(blob: BlobWriter, memory: UploadMemory = unlimitedMemory()) {
    const position = blob.size;
    this.#blob = blob;
    this.#start = position;
    this.#position = position;
    this.#accepted = position;
    this.#hashed = position;
    this.#memory = memory;
    this.#reuse = stashes.take(blob); // still outside the budget until used
    // The previous request of the session was a bulk one (its buffers reached full size): this
    // one starts at full size too, in the memory already mapped, instead of growing again.
    if (this.#reuse.some((b) => b.length === BUFFER_BYTES)) this.#nextSize = BUFFER_BYTES;
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

  /** Whether another byte can be taken without exceeding the pool or the budget (overflow does not count). */
  get #ready(): boolean {
    if ((this.#current !== null && this.#currentPooled) || this.#free.length > 0) return true;
    return this.#allocated < POOL_BUFFERS && this.#memory.canTake(this.#allocated === 0 ? MIN_BUFFER_BYTES : this.#nextSize);
  }

  /**
   * A pooled buffer to fill: a free one (an outgrown one is swapped for a larger one when the
   * budget allows), else a new one within pool and budget (the smallest when the budget is tight
   * and the writer holds none, so every writer can progress).
   */
  #pooledBuffer(): Buffer | null {
    const b = this.#free.pop();
    if (b && (b.length >= this.#nextSize || !this.#memory.canTake(this.#nextSize - b.length))) return b;
    if (b) this.#dropUnused(b, true);
    for (const size of this.#allocated === 0 ? [this.#nextSize, MIN_BUFFER_BYTES] : [this.#nextSize]) {
      if (this.#allocated < POOL_BUFFERS && this.#memory.tryTake(size)) {
        this.#allocated++;
        const i = this.#reuse.findIndex((r) => r.length === size);
        if (i === -1) return sharedBuffer(size);
        stashes.used(size);
        return this.#reuse.splice(i, 1)[0]!;
      }
    }
    return null;
  }

  /** Gives a buffer's memory back to the budget. */
  #drop(buf: Buffer, pooled: boolean): void {
    if (pooled) this.#allocated--;
    this.#memory.give(buf.length);
  }

  /** `#drop`, and the buffer to the process's pool unless a socket may still fill it. */
  #dropUnused(buf: Buffer, pooled: boolean): void {
    this.#drop(buf, pooled);
    if (buf !== this.#lastRegion) recycleShared(buf);
  }

  /** Makes `#current` a buffer to fill; with `overflow`, beyond the pool and budget when exhausted. */
  #take(overflow: number): boolean {
    if (this.#current) return true;
    const pooled = this.#pooledBuffer();
    if (pooled) {
      this.#current = pooled;
      this.#currentPooled = true;
    } else if (overflow > 0) {
      const size = Math.min(BUFFER_BYTES, Math.max(MIN_BUFFER_BYTES, overflow));
      this.#memory.force(size);
      this.#current = sharedBuffer(size);
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
    this.#lastRegion = this.#current;
    return this.#current!.subarray(this.#fill);
  }

  /**
   * The transport read its body to the end and holds no region any more (h1-connection.ts asks
   * for its next read buffer right after the read that completed the body, before any promise
   * settles), so the last region's buffer may be passed on to the session's next writer too.
   */
  regionsReturned(): void {
    this.#lastRegion = null;
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
    if (!this.#writing && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.#idleWaiters.push((e) => (e ? reject(e) : resolve())));
  }

  /**
   * Flushes, waits for background syncs, gives the buffers back and suspends the session's
   * writer (it stays open for the next request). Nothing is accepted after it was called.
   * @throws the first write error, or an Error when the bytes accepted, hashed and written differ.
   */
  async end(): Promise<void> {
    try {
      await this.flush();
      this.#ended = true;
      await Promise.all(this.#syncs);
      if (this.#hashed !== this.#accepted || this.#position !== this.#accepted) {
        throw new Error(`upload writer out of step: accepted ${this.#accepted - this.#start}, hashed ${this.#hashed - this.#start}, written ${this.#position - this.#start} bytes`);
      }
    } finally {
      this.#ended = true;
      if (this.#current) {
        this.#dropUnused(this.#current, this.#currentPooled);
        this.#current = null;
      }
      this.#stashFree();
      this.#blob.suspend();
    }
  }

  /**
   * Gives every free buffer back to the budget, keeping it (outside the budget, for `STASH_MS`)
   * for the session's next writer: the next PATCH of a chunked upload then fills memory that is
   * already mapped instead of faulting in fresh pages (measured: most of the extra CPU of a
   * chunked push over one PATCH). The last region's buffer is never kept, as a socket whose body
   * was cut off may still read into it; buffers the hash or a write release later follow.
   */
  #stashFree(): void {
    const stash = stashes.open(this.#blob, this.#reuse);
    this.#stash = stash;
    for (const b of this.#free.splice(0)) {
      this.#drop(b, true);
      if (b !== this.#lastRegion) stashes.offer(stash, b);
    }
  }

  #enqueueCurrent(): void {
    const buf = this.#current!;
    const slot: Slot = { buf, used: this.#fill, holds: 2, pooled: this.#currentPooled };
    if (this.#fill === buf.length) this.#nextSize = Math.min(BUFFER_BYTES, Math.max(this.#nextSize, buf.length * 4));
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
    if (slot.pooled && !this.#ended) {
      this.#free.push(slot.buf);
    } else {
      this.#drop(slot.buf, slot.pooled);
      if (slot.buf !== this.#lastRegion) {
        if (slot.pooled) stashes.offer(this.#stash, slot.buf);
        else recycleShared(slot.buf);
      }
    }
    this.#wake();
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
    if (this.#unsynced >= SYNC_EVERY_BYTES && !this.#error && !this.#syncing) {
      // One at a time: each covers every byte written before it, and syncs piling up behind a
      // slow disk would hold libuv's pool threads that reads and writes need.
      this.#unsynced = 0;
      this.#syncing = true;
      this.#syncs.push(this.#blob.sync().catch(() => {}).then(() => { this.#syncing = false; })); // a failed sync fails the commit (fs-writer.ts)
    }
    for (const s of batch) this.#release(s);
    if (!this.#error && this.#queue.length === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w(null);
    }
    this.#pump();
  }
}
