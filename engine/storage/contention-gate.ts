/**
 * Fair retries for optimistic transactions under contention (both metadata stores).
 *
 * Both stores run a transaction optimistically: LMDB validates its reads at commit, PostgreSQL's
 * SERIALIZABLE aborts one of two conflicting transactions. When many requests change one hot
 * record at once (CI cleaning up a repository with 32 parallel manifest DELETEs, all lowering the
 * reference count of one shared base layer), every commit invalidates the others' attempts:
 * with optimistic retries alone the n-th transaction needs n attempts, and past the attempt limit
 * it failed with 503 (measured: 3,000 DELETEs, 8 at a time, on one repository: 14–20 refused).
 *
 * The gate turns contention into a queue: a transaction whose first attempt conflicted runs its
 * later attempts `serially`, one at a time among this process's contended transactions, and a
 * transaction that starts while any contended one holds or waits for the gate first waits for
 * the gate's current queue (`whenClear`). A contended attempt can then only lose to the attempts
 * that were already running when it took the gate (and to other processes or nodes), so it
 * commits within a few attempts, and the 32nd of 32 waits for 31 commits instead of failing.
 * Without contention nothing changes: `whenClear` is a field read and no promise.
 *
 * A body that starts another transaction (allowed by the contract, and done by its tests) runs
 * that transaction without the gate while it holds it (AsyncLocalStorage marks the holder's
 * context), so the gate never waits for itself.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const holder = new AsyncLocalStorage<ContentionGate>();

/** The queue of one store's contended transactions (one per store instance, per process). */
export class ContentionGate {
  /** Settles when the last queued contended transaction has finished. */
  #tail: Promise<void> = Promise.resolve();
  /** Contended transactions holding or waiting for the gate. */
  #queued = 0;

  /**
   * Undefined when no contended transaction holds or waits for the gate (or when called from
   * the holder's own context); otherwise a promise that settles once those have finished. A new
   * transaction awaits it before its first attempt.
   */
  whenClear(): Promise<void> | undefined {
    if (this.#queued === 0 || holder.getStore() === this) return undefined;
    return this.#tail;
  }

  /**
   * Runs `fn` once every contended transaction queued before it has finished, with the gate
   * held; its result or rejection is passed on. Re-entrant: called from the holder's context it
   * runs `fn` at once.
   */
  async serially<T>(fn: () => Promise<T>): Promise<T> {
    if (holder.getStore() === this) return fn();
    this.#queued++;
    const before = this.#tail;
    let release!: () => void;
    const mine = new Promise<void>((r) => { release = r; });
    this.#tail = before.then(() => mine);
    try {
      await before;
      return await holder.run(this, fn);
    } finally {
      this.#queued--;
      release();
    }
  }

  /** Contended transactions holding or waiting for the gate now (metrics and tests). */
  get queued(): number {
    return this.#queued;
  }
}
