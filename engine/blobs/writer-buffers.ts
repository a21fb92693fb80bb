/**
 * The buffers of one upload writer (writer.ts `UploadWriter`): at most `POOL_BUFFERS` pooled
 * buffers within the global `UploadMemory` budget, overflow buffers beyond it for bytes that
 * arrive after a pause was asked for, and their reuse.
 *
 * Memory follows the bytes received, not the number of sessions: the first buffer is 4 KiB and
 * each one that fills up makes the next four times larger, up to 2 MiB (a free buffer that was
 * outgrown is swapped for a larger one when the budget allows), so a trickling session holds
 * 4 KiB while a fast one soon cycles four 2 MiB buffers. Sizes measured on a 1 GiB push: 4 MiB
 * rather than 1 MiB halved the event loop's CPU per GiB pushed on Node 20 (a quarter of the
 * hand-offs to the hash thread and the disk, of the wake-ups and of the socket pauses) for
 * 13 MiB more peak RSS; on Node 24, 2 MiB rather than 4 MiB kept the peak RSS 7.5 MiB lower
 * (116.2–116.6 against 123.6–124.4 MiB, three interleaved runs each) with no loss of speed or
 * CPU that the runs could tell apart (one PATCH 1.91–2.25 against 1.97–2.06 CPU-s/GiB; 16 MiB
 * chunks 1.96–2.48 against 2.24–2.85; 16 concurrent pushes 336–368 against 332–352 MB/s).
 * Every buffer is taken from the global
 * `UploadMemory` budget and given back when dropped (at `end` at the latest); when the budget is
 * spent the writer asks for a pause and resumes when memory is given back.
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
import { MIN_BUFFER_BYTES, type UploadMemory } from './upload-memory.js';
import { recycleShared, sharedBuffer } from './aligned-buffer.js';
import { bufferStashes, type Stash } from './buffer-stash.js';

/** Size of the largest pool buffer (bytes). */
export const BUFFER_BYTES = 2 * 1024 * 1024;
/** Buffers per writer: the most bytes in flight before the caller is asked to pause. */
export const POOL_BUFFERS = 4;
/**
 * A paused writer asks to resume only once at most this many buffers are still being hashed or
 * written, so each pause of the socket is followed by at least two buffers' worth of reads
 * (every pause and resume costs the event loop two epoll_ctl calls and a wake-up).
 */
export const RESUME_IN_FLIGHT = POOL_BUFFERS / 2;
/** How long a session keeps its finished writer's free buffers for its next request (ms). */
export const STASH_MS = 1000;
/**
 * Most bytes of buffers kept for next requests, all sessions together, outside the budget: in
 * stashes, and adopted by a next writer but not yet used by it.
 */
export const STASH_LIMIT_BYTES = 2 * POOL_BUFFERS * BUFFER_BYTES;

const stashes = bufferStashes(STASH_LIMIT_BYTES, STASH_MS);

/** The buffers of one writer (see the file header); the writer keeps the one it fills. */
export class WriterBuffers {
  readonly #memory: UploadMemory;
  readonly #blob: BlobWriter;
  readonly #free: Buffer[] = [];
  #allocated = 0;
  #nextSize = MIN_BUFFER_BYTES;
  /** The buffer of the last `region()`: a socket may still read into it, so it is never stashed. */
  lastRegion: Buffer | null = null;
  /** Where this writer leaves its free buffers once ended. */
  #stash: Stash | null = null;
  /** Buffers the session's previous writer left: used instead of new ones of the same size. */
  #reuse: Buffer[] = [];

  /**
   * @param blob the session's writer (the key of its stash of buffers between requests)
   * @param memory the global upload buffer budget
   */
  constructor(blob: BlobWriter, memory: UploadMemory) {
    this.#blob = blob;
    this.#memory = memory;
    this.#reuse = stashes.take(blob); // still outside the budget until used
    // The previous request of the session was a bulk one (its buffers reached full size): this
    // one starts at full size too, in the memory already mapped, instead of growing again.
    if (this.#reuse.some((b) => b.length === BUFFER_BYTES)) this.#nextSize = BUFFER_BYTES;
  }

  /** Whether a pooled buffer is free, or a new one fits the pool and the budget. */
  canTake(): boolean {
    if (this.#free.length > 0) return true;
    return this.#allocated < POOL_BUFFERS && this.#memory.canTake(this.#allocated === 0 ? MIN_BUFFER_BYTES : this.#nextSize);
  }

  /**
   * A pooled buffer to fill: a free one (an outgrown one is swapped for a larger one when the
   * budget allows), else a new one within pool and budget (the smallest when the budget is tight
   * and the writer holds none, so every writer can progress); null when none can be had.
   */
  take(): Buffer | null {
    const b = this.#free.pop();
    if (b && (b.length >= this.#nextSize || !this.#memory.canTake(this.#nextSize - b.length))) return b;
    if (b) this.dropUnused(b, true);
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

  /** A buffer beyond the pool and the budget (forced on it) for `bytes` more bytes (at most `BUFFER_BYTES`). */
  overflow(bytes: number): Buffer {
    const size = Math.min(BUFFER_BYTES, Math.max(MIN_BUFFER_BYTES, bytes));
    this.#memory.force(size);
    return sharedBuffer(size);
  }

  /** A buffer of `length` bytes was filled completely: the next new buffer is up to four times larger. */
  filled(length: number): void {
    this.#nextSize = Math.min(BUFFER_BYTES, Math.max(this.#nextSize, length * 4));
  }

  /** Gives a buffer's memory back to the budget. */
  #drop(buf: Buffer, pooled: boolean): void {
    if (pooled) this.#allocated--;
    this.#memory.give(buf.length);
  }

  /** Gives a buffer's memory back, and the buffer to the process's pool unless a socket may still fill it. */
  dropUnused(buf: Buffer, pooled: boolean): void {
    this.#drop(buf, pooled);
    if (buf !== this.lastRegion) recycleShared(buf);
  }

  /**
   * A buffer the hash and the write are done with: free again while the writer runs (`ended`
   * false, pooled), else its memory goes back to the budget and the buffer to the session's
   * stash (pooled) or the process's pool (overflow), unless a socket may still fill it.
   */
  release(buf: Buffer, pooled: boolean, ended: boolean): void {
    if (pooled && !ended) {
      this.#free.push(buf);
      return;
    }
    this.#drop(buf, pooled);
    if (buf !== this.lastRegion) {
      if (pooled) stashes.offer(this.#stash, buf);
      else recycleShared(buf);
    }
  }

  /**
   * For a body whose request commits the blob next (a monolithic POST, a PUT with a body): the
   * session ends there, so no next writer of it would take a stash. Every free buffer goes back
   * to the budget and to the process's pool at once (the last region's excepted, as in
   * `stashFree`), where the next body in a lane takes it instead of faulting in fresh pages;
   * buffers the hash or a write release later follow (no stash is open).
   */
  recycleFree(): void {
    for (const b of this.#free.splice(0)) this.dropUnused(b, true);
  }

  /**
   * Gives every free buffer back to the budget, keeping it (outside the budget, for `STASH_MS`)
   * for the session's next writer: the next PATCH of a chunked upload then fills memory that is
   * already mapped instead of faulting in fresh pages (measured: most of the extra CPU of a
   * chunked push over one PATCH). The last region's buffer is never kept, as a socket whose body
   * was cut off may still read into it; buffers the hash or a write release later follow. A
   * second call adds the buffers freed since to the same stash.
   */
  stashFree(): void {
    const stash = (this.#stash ??= stashes.open(this.#blob, this.#reuse));
    for (const b of this.#free.splice(0)) {
      this.#drop(b, true);
      if (b !== this.lastRegion) stashes.offer(stash, b);
    }
  }
}
