/**
 * Manifest pulls, buffered on their way to the notification outbox. A pull changes nothing, so
 * it has no transaction to ride in, and it is the registry's hot path (a manifest GET answers
 * without a promise on the embedded store: engine/maybe-sync.ts); writing one outbox record per
 * pull would add a metadata commit (an fsync on LMDB, a round trip on PostgreSQL) to every pull.
 * So a pull only appends a small record to this bounded in-memory buffer (no I/O, no promise), and
 * a background flush writes what gathered — at most every `flushMs`, or sooner once `batch`
 * pulls wait — in one transaction, as one envelope of up to `batch` events (distribution's
 * envelopes may group unrelated events). From the outbox on, pull events are as
 * durable as the others.
 *
 * The price, stated in docs/notifications.md: the pulls of the last flush interval are lost if the
 * process dies (distribution keeps every event in memory only), and under overload — more than
 * `capacity` pulls waiting, because the store is slow or down — new pulls are not recorded and
 * are counted in `dropped` (metric `slipway_notification_pulls_dropped_total`) rather than slow
 * down or fail the pull.
 */
import type { Digest } from '../digest.js';

/** One pull as captured on the hot path: plain fields, the actor resolved at the flush. */
export interface PullRecord {
  repository: string;
  digest: Digest;
  mediaType: string;
  /** Manifest bytes. */
  size: number;
  /** The tag pulled, when the reference was one. */
  tag?: string;
  /** ms since the epoch. */
  at: number;
  requestId: string;
  addr: string;
  host: string;
  method: string;
  useragent: string;
  /** The pulling account; '' when anonymous. */
  accountId: string;
}

/** Limits of the buffer. */
export interface PullBufferOptions {
  /** Most pulls waiting; past it new pulls are dropped and counted. */
  capacity: number;
  /** Pulls per flush (and per envelope); a flush starts at once when this many wait. */
  batch: number;
  /** Longest a pull waits for its flush (ms). */
  flushMs: number;
}

/** 200 pulls make an envelope of about 120 KiB, within the outbox's 256 KiB per event. */
export const PULL_BUFFER_DEFAULTS: PullBufferOptions = { capacity: 10_000, batch: 200, flushMs: 1000 };

/**
 * The buffer and its flush loop. `write` receives each batch and must record it durably (one
 * transaction) or throw; a batch that fails is kept for the next flush while there is room.
 */
export class PullBuffer {
  #items: PullRecord[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #stopped = false;
  /** Pulls not recorded because the buffer was full (since start). */
  dropped = 0;

  constructor(
    readonly write: (batch: PullRecord[]) => Promise<void>,
    readonly options: PullBufferOptions = PULL_BUFFER_DEFAULTS,
    readonly onError: (e: unknown) => void = () => {},
  ) {}

  /** Pulls waiting for a flush. */
  get pending(): number {
    return this.#items.length;
  }

  /** Records a pull: O(1), no I/O; dropped (and counted) when the buffer is full or stopped. */
  add(pull: PullRecord): void {
    if (this.#stopped || this.#items.length >= this.options.capacity) {
      this.dropped++;
      return;
    }
    this.#items.push(pull);
    if (this.#items.length >= this.options.batch) this.#schedule(0);
    else this.#schedule(this.options.flushMs);
  }

  #schedule(delayMs: number): void {
    if (this.#flushing) return; // the running flush reschedules when it ends
    if (this.#timer && delayMs > 0) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.flush(), delayMs);
    this.#timer.unref();
  }

  /** Writes everything waiting now (batch by batch); resolves when done. Never rejects. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flushing ??= this.#run().finally(() => {
      this.#flushing = undefined;
      if (this.#items.length > 0 && !this.#stopped) this.#schedule(this.#items.length >= this.options.batch ? 0 : this.options.flushMs);
    });
    return this.#flushing;
  }

  /**
   * Writes one batch of what waits, then more only while full batches wait (or once stopped):
   * pulls arriving during a write wait for their timer, so batches stay large under load.
   */
  async #run(): Promise<void> {
    for (let first = true; this.#items.length > 0 && (first || this.#stopped || this.#items.length >= this.options.batch); first = false) {
      const batch = this.#items.splice(0, this.options.batch);
      try {
        await this.write(batch);
      } catch (e) {
        this.onError(e);
        // Keep the batch for the next flush, as far as there is room.
        const room = Math.max(0, this.options.capacity - this.#items.length);
        this.dropped += batch.length - Math.min(room, batch.length);
        this.#items.unshift(...batch.slice(0, room));
        return;
      }
    }
  }

  /** Flushes what waits (once) and takes no more pulls. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.flush();
    clearTimeout(this.#timer);
  }
}
