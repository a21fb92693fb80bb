/**
 * A deadline for I/O on the data disk. A disk that hangs (a device or a network or FUSE file
 * system that stops answering) neither completes nor fails a write or an fsync: the call waits in
 * the kernel, on one of libuv's threads or on LMDB's write thread, for as long as the disk stays
 * stuck. The request that waits on it must still end (docs/faults.md "A data disk that hangs"):
 * `DiskDeadline.run` gives it up after `SLIPWAY_DISK_TIMEOUT` with STORAGE_STALLED (503 with
 * Retry-After), while the operation itself stays counted until it settles, so the readiness
 * probe reports the disk as stuck (`stuck()`) without adding more I/O to the pile.
 *
 * The operation is not cancelled (the kernel offers no way to): its late completion must leave
 * nothing that the answer contradicts. Callers make sure of that (engine/blobs/stall-guard.ts
 * for upload sessions; a metadata transaction is atomic and lands whole or not at all).
 */
import { fail, isSlipwayError, type SlipwayError } from '../errors.js';

/** Retry-After of a STORAGE_STALLED answer (seconds). */
export const STORAGE_STALLED_RETRY_AFTER_SECONDS = 10;

/** Default deadline of one disk operation (seconds); SLIPWAY_DISK_TIMEOUT. */
export const DEFAULT_DISK_TIMEOUT_SECONDS = 30;

/** Whether `e` is the engine's STORAGE_STALLED. */
export function isStalled(e: unknown): e is SlipwayError {
  return isSlipwayError(e) && e.code === 'STORAGE_STALLED';
}

/** One operation on the disk that has not settled yet. */
interface Pending { what: string; since: number }

/** Deadlines of the operations on one data disk (see the file header). */
export class DiskDeadline {
  readonly #pending = new Set<Pending>();

  /** @param timeoutMs how long one operation may take before its caller gives it up (ms) */
  constructor(public timeoutMs: number = DEFAULT_DISK_TIMEOUT_SECONDS * 1000) {}

  /** The STORAGE_STALLED error for an operation on `what` that did not complete in time. */
  stalled(what: string): SlipwayError {
    const s = Math.round(this.timeoutMs / 100) / 10;
    return fail('STORAGE_STALLED', `the registry's data disk is not answering: ${what} did not complete within ${s} s (SLIPWAY_DISK_TIMEOUT); retry later`, { retryAfter: STORAGE_STALLED_RETRY_AFTER_SECONDS });
  }

  /**
   * `op`'s result, or STORAGE_STALLED once it has taken `timeoutMs`; `op` stays counted (and
   * `stuck()` reports it) until it settles. Its own errors pass through unchanged.
   * @param what what the operation writes, for the message ("a write of upload bytes")
   */
  run<T>(what: string, op: Promise<T>): Promise<T> {
    const entry: Pending = { what, since: performance.now() };
    this.#pending.add(entry);
    const settled = op.finally(() => this.#pending.delete(entry));
    settled.catch(() => {}); // the caller may have stopped waiting: its error must not go unhandled
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(this.stalled(what)), this.timeoutMs); });
    return Promise.race([settled, late]).finally(() => clearTimeout(timer));
  }

  /**
   * The oldest operation that has been waiting longer than the deadline, with its age (ms), or
   * undefined when the disk answers. Reads memory only (no I/O), so it answers while the disk hangs.
   */
  stuck(): { what: string; ms: number } | undefined {
    const now = performance.now();
    let oldest: Pending | undefined;
    for (const p of this.#pending) if (!oldest || p.since < oldest.since) oldest = p;
    if (!oldest || now - oldest.since < this.timeoutMs) return undefined;
    return { what: oldest.what, ms: Math.round(now - oldest.since) };
  }
}

/**
 * The process's data disk. One process serves one data directory; the server sets the deadline
 * from SLIPWAY_DISK_TIMEOUT at start (`dataDisk.timeoutMs = …`).
 */
export const dataDisk = new DiskDeadline();
