/**
 * Streams bytes into an upload file while updating its sha256 (DESIGN.md "Hot paths").
 *
 * Bytes land in a small per-writer pool of 1 MiB buffers (at most 4, allocated on first use):
 * either read there directly by the transport (`region`/`commit`, the upload host's zero-copy
 * path) or copied by `write`. A full buffer is handed at the same time to the running hash
 * (possibly on another thread) and to a positional `writev`; it returns to the pool when both are
 * done. `write`/`commit` return false once every buffer is busy; the caller pauses its socket
 * until `onDrain`. Every 64 MiB an `fdatasync` starts in the background so the final sync at
 * commit has little left to do.
 *
 * Buffers are SharedArrayBuffer-backed so a hash thread reads them without a copy. They are never
 * shared between writers: a socket may still hold a region of a finished writer's buffer (a body
 * cut off mid-read), and only that dead writer's memory may receive such stray bytes.
 */
import { close, fdatasync, writev } from 'node:fs';
import type { RunningHash } from './running-hash.js';

/** Size of one pool buffer (bytes). */
export const BUFFER_BYTES = 1024 * 1024;
/** Buffers per writer: the most bytes in flight before the caller is asked to pause. */
export const POOL_BUFFERS = 4;
/** Bytes written between background fdatasync calls. */
export const SYNC_EVERY_BYTES = 64 * 1024 * 1024;

/** A filled buffer on its way to disk and through the hash. */
interface Slot {
  buf: Buffer;
  used: number;
  /** Outstanding holders (write, hash); the buffer is free again at 0. */
  holds: number;
  pooled: boolean;
}

function sharedBuffer(bytes: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(bytes));
}

export class UploadWriter {
  readonly #fd: number;
  readonly #hash: RunningHash;
  #position: number;
  #accepted: number;
  readonly #free: Buffer[] = [];
  #allocated = 0;
  #current: Buffer | null = null;
  #currentPooled = true;
  #fill = 0;
  #queue: Slot[] = [];
  #writing = false;
  #unsynced = 0;
  #syncs: Array<Promise<void>> = [];
  #error: Error | null = null;
  #drainWaiter: (() => void) | null = null;
  #idleWaiters: Array<(e: Error | null) => void> = [];

  /**
   * @param fd an open file descriptor; positioned writes start at `position` (bytes)
   * @param hash the running sha256 of every byte before `position`
   */
  constructor(fd: number, position: number, hash: RunningHash) {
    this.#fd = fd;
    this.#position = position;
    this.#accepted = position;
    this.#hash = hash;
  }

  /** Bytes accepted so far, including the starting position. */
  get offset(): number {
    return this.#accepted;
  }

  /** Bytes written since the last background fdatasync started (all of them once `end` resolved). */
  get unsyncedBytes(): number {
    return this.#unsynced;
  }

  /** Whether another byte can be taken without exceeding the pool (overflow does not count). */
  get #ready(): boolean {
    return (this.#current !== null && this.#currentPooled) || this.#free.length > 0 || this.#allocated < POOL_BUFFERS;
  }

  /** Makes `#current` a buffer to fill; with `overflow`, beyond the pool when it is exhausted. */
  #take(overflow: boolean): boolean {
    if (this.#current) return true;
    const pooled = this.#free.pop() ?? (this.#allocated < POOL_BUFFERS ? (this.#allocated++, sharedBuffer(BUFFER_BYTES)) : null);
    if (pooled) {
      this.#current = pooled;
      this.#currentPooled = true;
    } else if (overflow) {
      this.#current = sharedBuffer(BUFFER_BYTES);
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
   */
  write(chunk: Buffer): boolean {
    if (this.#error) return false;
    this.#accepted += chunk.length;
    let off = 0;
    while (off < chunk.length) {
      this.#take(true);
      const n = chunk.copy(this.#current!, this.#fill, off);
      this.#fill += n;
      off += n;
      if (this.#fill === this.#current!.length) this.#enqueueCurrent();
    }
    return this.#ready;
  }

  /**
   * Zero-copy path (BodySink): the free part of the current pool buffer, for the transport to
   * read socket bytes into; null when every pool buffer is busy.
   */
  region(): Buffer | null {
    if (this.#error || !this.#take(false)) return null;
    return this.#current!.subarray(this.#fill);
  }

  /** `n` bytes were placed at the start of the last `region()`; same result as `write`. */
  commit(n: number): boolean {
    if (this.#error) return false;
    this.#accepted += n;
    this.#fill += n;
    if (this.#fill === this.#current!.length) this.#enqueueCurrent();
    return this.#ready;
  }

  /** Registers the one callback to run when a pool buffer is free again. */
  onDrain(cb: () => void): void {
    this.#drainWaiter = cb;
  }

  /** Resolves when every accepted byte is written; rejects with the first write error. */
  flush(): Promise<void> {
    if (this.#current && this.#fill > 0) this.#enqueueCurrent();
    if (this.#error) return Promise.reject(this.#error);
    if (!this.#writing && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.#idleWaiters.push((e) => (e ? reject(e) : resolve())));
  }

  /** Flushes, waits for background syncs, and closes the descriptor. */
  async end(): Promise<void> {
    try {
      await this.flush();
      await Promise.all(this.#syncs);
    } finally {
      await new Promise<void>((resolve) => close(this.#fd, () => resolve()));
    }
  }

  #enqueueCurrent(): void {
    const slot: Slot = { buf: this.#current!, used: this.#fill, holds: 2, pooled: this.#currentPooled };
    this.#current = null;
    this.#fill = 0;
    this.#queue.push(slot);
    this.#hash.update(slot.buf.subarray(0, slot.used), () => this.#release(slot));
    this.#pump();
  }

  #release(slot: Slot): void {
    if (--slot.holds > 0) return;
    if (slot.pooled) this.#free.push(slot.buf);
    if (this.#drainWaiter && (this.#error || this.#ready)) {
      const d = this.#drainWaiter;
      this.#drainWaiter = null;
      d();
    }
  }

  #pump(): void {
    if (this.#writing || this.#queue.length === 0 || this.#error) return;
    const batch = this.#queue;
    this.#queue = [];
    const bytes = batch.reduce((n, s) => n + s.used, 0);
    this.#writing = true;
    writev(this.#fd, batch.map((s) => s.buf.subarray(0, s.used)), this.#position, (err, written) => {
      this.#writing = false;
      if (err) this.#error = err;
      else if (written !== bytes) {
        // Short write: the remainder goes first, from a copy (the slots are released below).
        const rest = Buffer.concat(batch.map((s) => s.buf.subarray(0, s.used))).subarray(written);
        this.#queue.unshift({ buf: rest, used: rest.length, holds: 1, pooled: false });
      }
      const done = err ? 0 : written;
      this.#position += done;
      this.#unsynced += done;
      if (this.#unsynced >= SYNC_EVERY_BYTES && !this.#error) {
        this.#unsynced = 0;
        this.#syncs.push(new Promise((resolve) => fdatasync(this.#fd, () => resolve())));
      }
      for (const s of batch) this.#release(s);
      if (this.#error || this.#queue.length === 0) {
        const waiters = this.#idleWaiters;
        this.#idleWaiters = [];
        for (const w of waiters) w(this.#error);
      }
      this.#pump();
    });
  }
}
