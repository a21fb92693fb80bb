/**
 * The global budget of upload buffer memory (bytes), shared by every upload writer
 * (engine/blobs/writer.ts). A writer takes memory for a buffer only when bytes arrive for it and
 * gives it back when the buffer is dropped, so idle or trickling sessions hold at most one small
 * buffer each. When the budget is spent, writers pause their sockets and wait (`wait`), and a new
 * append is refused with 503 and Retry-After (`Uploads.beginAppend`).
 */

/** Bytes of the smallest buffer a writer allocates: a new append needs at least this free. */
export const MIN_BUFFER_BYTES = 4 * 1024;

export class UploadMemory {
  #used = 0;
  #waiters: Array<() => void> = [];

  /** @param limit most bytes of upload buffers allocated at once (SLIPWAY_UPLOAD_MEMORY). */
  constructor(readonly limit: number) {}

  /** Bytes currently allocated to upload buffers. */
  get used(): number {
    return this.#used;
  }

  /** Whether `bytes` more can be taken now. */
  canTake(bytes: number): boolean {
    return this.#used + bytes <= this.limit;
  }

  /** Takes `bytes` when they fit under the limit; false (nothing taken) otherwise. */
  tryTake(bytes: number): boolean {
    if (!this.canTake(bytes)) return false;
    this.#used += bytes;
    return true;
  }

  /** Takes `bytes` whatever the limit (bytes a transport delivered before it could pause). */
  force(bytes: number): void {
    this.#used += bytes;
  }

  /** Gives back `bytes` and wakes the writers waiting for memory (each retries, in order). */
  give(bytes: number): void {
    this.#used -= bytes;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** Runs `cb` once, the next time memory is given back. */
  wait(cb: () => void): void {
    this.#waiters.push(cb);
  }
}

/** A budget with no limit (engine tests and tools that are not a server). */
export const unlimitedMemory = (): UploadMemory => new UploadMemory(Number.MAX_SAFE_INTEGER);
