/**
 * Streams bytes into an upload file while updating its sha256 incrementally. Nothing holds a
 * whole layer: at most `highWaterMark` bytes are queued or in flight; `write()` returns false
 * above it, and the caller pauses its socket until `onDrain` fires (DESIGN.md "Hot paths").
 *
 * Chunks are written with one positional `writev` at a time, so queued chunks coalesce into a
 * single system call while the previous one is in the libuv pool.
 */
import { writev, close } from 'node:fs';
import type { Hash as CryptoHash } from 'node:crypto';


/** Default bytes queued before `write()` asks the caller to pause (8 MiB). */
export const DEFAULT_HIGH_WATER_MARK = 8 * 1024 * 1024;

export class UploadWriter {
  readonly #fd: number;
  readonly #hash: CryptoHash;
  #position: number;
  #queue: Buffer[] = [];
  #queuedBytes = 0;
  #inflightBytes = 0;
  #writing = false;
  #error: Error | null = null;
  #drainWaiter: (() => void) | null = null;
  #idleWaiters: Array<(e: Error | null) => void> = [];
  readonly #highWaterMark: number;

  /**
   * @param fd an open file descriptor, positioned writes start at `position` (bytes)
   * @param hash the running sha256 of every byte before `position`
   */
  constructor(fd: number, position: number, hash: CryptoHash, highWaterMark = DEFAULT_HIGH_WATER_MARK) {
    this.#fd = fd;
    this.#position = position;
    this.#hash = hash;
    this.#highWaterMark = highWaterMark;
  }

  /** Bytes accepted so far including the starting position. */
  get offset(): number {
    return this.#position + this.#inflightBytes + this.#queuedBytes;
  }

  /** The hash covering every accepted byte. Valid once `end()` resolved. */
  get hash(): CryptoHash {
    return this.#hash;
  }

  /**
   * Accepts a chunk the caller owns (it must not be reused). Returns false when the caller
   * should pause until `onDrain`.
   */
  write(chunk: Buffer): boolean {
    if (this.#error) return false;
    this.#hash.update(chunk);
    this.#queue.push(chunk);
    this.#queuedBytes += chunk.length;
    this.#pump();
    return this.#queuedBytes + this.#inflightBytes < this.#highWaterMark;
  }

  /** Registers the one callback to run when queued bytes fall below half the high-water mark. */
  onDrain(cb: () => void): void {
    this.#drainWaiter = cb;
  }

  /** Resolves when every accepted byte is written; rejects with the first write error. */
  flush(): Promise<void> {
    if (this.#error) return Promise.reject(this.#error);
    if (!this.#writing && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.#idleWaiters.push((e) => (e ? reject(e) : resolve())));
  }

  /** Flushes and closes the descriptor. */
  async end(): Promise<void> {
    try {
      await this.flush();
    } finally {
      await new Promise<void>((resolve) => close(this.#fd, () => resolve()));
    }
  }

  #pump(): void {
    if (this.#writing || this.#queue.length === 0 || this.#error) return;
    const batch = this.#queue;
    const bytes = this.#queuedBytes;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#inflightBytes = bytes;
    this.#writing = true;
    writev(this.#fd, batch, this.#position, (err, written) => {
      this.#writing = false;
      if (!err && written !== bytes) {
        // Short write: requeue the remainder in front.
        const rest = Buffer.concat(batch).subarray(written);
        this.#queue.unshift(rest);
        this.#queuedBytes += rest.length;
      }
      this.#position += err ? 0 : written;
      this.#inflightBytes = 0;
      if (err) this.#error = err;
      if (this.#error || this.#queue.length === 0) {
        const waiters = this.#idleWaiters;
        this.#idleWaiters = [];
        for (const w of waiters) w(this.#error);
      }
      this.#pump();
      if (this.#drainWaiter && (this.#error || this.#queuedBytes + this.#inflightBytes < this.#highWaterMark / 2)) {
        const d = this.#drainWaiter;
        this.#drainWaiter = null;
        d();
      }
    });
  }
}
