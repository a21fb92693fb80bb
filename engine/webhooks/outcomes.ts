/**
 * Group commit of attempt outcomes (docs/webhooks.md "Engine"): the delivery worker hands each
 * finished attempt's outcome to an `OutcomeRecorder`, which records all the outcomes waiting
 * into one metadata transaction (`completeMany`), at most `OUTCOME_BATCH` per commit. While one
 * commit is in progress, the outcomes that arrive meanwhile wait for the next: under load one
 * commit records many attempts; alone, an outcome is recorded as soon as it arrives.
 *
 * Guarantees are those of `complete`: an outcome is recorded only while its lease holds, and an
 * attempt's slot is freed only once its outcome is recorded (the caller awaits `record`). A
 * commit that fails rejects every outcome of its batch: those deliveries fall due again at their
 * lease's end and are attempted again (at-least-once), as after a single failed `complete`.
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import type { DeliveryRecord } from './records.js';
import { completeMany, type Completion } from './deliveries.js';

/** Outcomes recorded per transaction at most: bounds one commit (the worker has ≤ 32 attempts in flight). */
export const OUTCOME_BATCH = 64;

interface Waiting {
  completion: Completion;
  resolve: (d: DeliveryRecord | null) => void;
  reject: (e: unknown) => void;
}

export class OutcomeRecorder {
  readonly #queue: Waiting[] = [];
  #flushing = false;

  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

  /**
   * Records `completion` with the next commit.
   * @returns the delivery after the change, or null when its lease was lost (as `complete`).
   * @throws what the store throws for the batch's transaction.
   */
  record(completion: Completion): Promise<DeliveryRecord | null> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ completion, resolve, reject });
      if (!this.#flushing) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, OUTCOME_BATCH);
        try {
          const after = await completeMany(this.metadata, batch.map((w) => w.completion), this.clock.now());
          batch.forEach((w, i) => w.resolve(after[i]!));
        } catch (e) {
          for (const w of batch) w.reject(e);
        }
      }
    } finally {
      this.#flushing = false;
    }
  }
}
