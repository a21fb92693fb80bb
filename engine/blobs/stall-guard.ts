/**
 * Deadlines for an upload session's file I/O on the filesystem backend (docs/faults.md "A data
 * disk that hangs"). `stallGuard` wraps a session writer (fs-writer.ts): its writes, syncs,
 * rewinds and the commit (fdatasync, rename into place, directory fsync) each answer within the
 * disk deadline (engine/storage/disk-deadline.ts), else fail with STORAGE_STALLED, which ends the
 * request with 503 and Retry-After.
 *
 * The operation that was given up still runs in the kernel and may complete later, so the
 * session stays consistent this way:
 * - once an operation was given up the writer is *wedged*: every later operation first waits
 *   (within the deadline again, else STORAGE_STALLED) until all earlier ones settled;
 * - `rewind(offset)` (the upload engine cuts the session back to its acknowledged offset after a
 *   failed append) is applied only then, so a late write cannot land after the cut; until then
 *   `size` is that offset, which is what the session's Range says and where the next PATCH starts;
 * - `abort` of a wedged writer does not wait: the bytes are removed once the disk answers.
 * Acknowledged bytes are never touched: a rewind only cuts what was not acknowledged.
 */
import type { Digest } from '../digest.js';
import type { BlobWriter, CommitOptions, CommitResult } from './contract.js';
import { appendHashed } from './backend-common.js';
import { dataDisk, type DiskDeadline } from '../storage/disk-deadline.js';

/** A session writer whose every file operation has the disk deadline (see the file header). */
class StallGuard implements BlobWriter {
  readonly #inner: BlobWriter & { rewind(size: number): Promise<void> };
  readonly #disk: DiskDeadline;
  /** Operations of the inner writer that have not settled (given up or not). */
  readonly #pending = new Set<Promise<unknown>>();
  #wedged = false;
  /** The offset to cut back to once every pending operation settled. */
  #rewindTo: number | undefined;

  constructor(inner: BlobWriter & { rewind(size: number): Promise<void> }, disk: DiskDeadline) {
    this.#inner = inner;
    this.#disk = disk;
  }

  get id(): string {
    return this.#inner.id;
  }

  /** The acknowledged offset while a cut back is pending, else the inner writer's size. */
  get size(): number {
    return this.#rewindTo ?? this.#inner.size;
  }

  /** Starts `op` on the inner writer under the deadline, once a wedged writer has settled. */
  async #guard<T>(what: string, op: () => Promise<T>): Promise<T> {
    if (this.#wedged) await this.#settle();
    return this.#guardless(what, op());
  }

  /** `p` (an operation of the inner writer) under the deadline, counted until it settles. */
  async #guardless<T>(what: string, p: Promise<T>): Promise<T> {
    this.#pending.add(p);
    void p.then(() => this.#pending.delete(p), () => this.#pending.delete(p));
    try {
      return await this.#disk.run(what, p);
    } catch (e) {
      if (this.#pending.has(p)) this.#wedged = true; // given up while it still runs
      throw e;
    }
  }

  /**
   * Waits (within the deadline) for every pending operation, then applies a pending cut back.
   * @throws STORAGE_STALLED when they do not settle in time (the writer stays wedged)
   */
  async #settle(): Promise<void> {
    await this.#disk.run('an earlier write of this upload session', Promise.allSettled([...this.#pending]));
    if (this.#rewindTo !== undefined) {
      const to = this.#rewindTo;
      await this.#guardless('cutting the upload session back to its acknowledged offset', this.#inner.rewind(to));
      if (this.#rewindTo === to) this.#rewindTo = undefined;
    }
    this.#wedged = false;
  }

  feedHash(bytes: Buffer, done: () => void): void {
    this.#inner.feedHash(bytes, done);
  }

  append(bytes: Uint8Array): Promise<void> {
    return appendHashed(this, bytes);
  }

  write(chunks: readonly Uint8Array[]): Promise<void> {
    return this.#guard('a write of upload bytes', () => this.#inner.write(chunks));
  }

  sync(): Promise<void> {
    return this.#guard('an fdatasync of upload bytes', () => this.#inner.sync());
  }

  suspend(): void {
    this.#inner.suspend();
  }

  /**
   * Cuts the session back to `size` (its acknowledged offset). On a wedged writer the cut is
   * applied once its operations settled (by the next operation); `size` reads `size` meanwhile.
   */
  async rewind(size: number): Promise<void> {
    if (this.#wedged) {
      this.#rewindTo = size;
      return;
    }
    await this.#guard('cutting the upload session back to its acknowledged offset', () => this.#inner.rewind(size));
  }

  commit(expected: Digest, options?: CommitOptions): Promise<CommitResult> {
    return this.#guard('the commit of the upload (fdatasync, rename into place)', () => this.#inner.commit(expected, options));
  }

  async abort(): Promise<void> {
    if (!this.#wedged && this.#pending.size === 0) return this.#inner.abort();
    // Not waited for: the session ends now, its bytes go once the disk answers.
    void Promise.allSettled([...this.#pending]).then(() => this.#inner.abort()).catch(() => {});
  }
}

/**
 * `inner` with the disk deadline on each of its file operations (see the file header).
 * @param disk the deadlines of the data disk (default: the process's)
 */
export function stallGuard(inner: BlobWriter & { rewind(size: number): Promise<void> }, disk: DiskDeadline = dataDisk): BlobWriter {
  return new StallGuard(inner, disk);
}
