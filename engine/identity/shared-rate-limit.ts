/**
 * Rate-limit pools in the metadata store (keyspace `rate-limits`: account id → bucket), for a
 * cluster: every node takes from the same bucket, so `RateLimit-Remaining` counts the account's
 * requests on every node.
 *
 * ## Group commit per account
 * A take is not a transaction of its own. Per account, a node keeps at most one transaction in
 * flight; takes arriving meanwhile join the next batch, which commits as one transaction that
 * reads the bucket, refills it to now, grants as many of the batch's takes as it holds tokens for,
 * and writes it back. The i-th take of a batch (in arrival order) is granted when i < granted and
 * told `remaining = floor(tokens before the batch − (i + 1))`. So:
 * - **the header is exact**: each answer counts every take committed before its batch, on any
 *   node (the transaction is serializable: two nodes' batches for one account are ordered, one
 *   is retried), plus the takes ahead of it in its own batch; nothing is estimated or leased;
 * - **the pool is never overdrawn**, cluster-wide;
 * - **cost**: at low load one transaction per request (a request waits for its commit); under
 *   load on one account, one transaction per in-flight round trip however many requests arrive
 *   (bench/README.md "Rate-limit pools" has the figures, and why the embedded store keeps its
 *   pools in memory instead).
 * A failed transaction (store unavailable) fails every take of its batch with the same error.
 */
import type { Clock } from '../clock.js';
import type { MetadataStore } from '../storage/metadata.js';
import { rateLimits } from './keyspaces.js';
import { RateLimiter, refilled, type RateLimitPool, type RateLimitState } from './rate-limit.js';

/** Takes waiting for one account's next commit, in arrival order. */
interface Batch {
  waiters: Array<{ resolve(s: RateLimitState): void; reject(e: unknown): void }>;
}

/** Buckets in the metadata store, shared by every node (see the top of this file). */
export class SharedRateLimiter implements RateLimitPool {
  readonly #perMs: number;
  /** Per account: the batch that will commit next (while one is in flight). */
  readonly #next = new Map<string, Batch>();
  /** Accounts with a commit in flight. */
  readonly #flying = new Set<string>();

  /**
   * @param pool bucket size, tokens
   * @param perMinute refill rate, tokens per minute
   */
  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly pool: number, readonly perMinute: number) {
    this.#perMs = perMinute / 60_000;
  }

  /** Takes one token from `accountId`'s shared bucket; resolves once the take is committed. @throws what the store throws (StoreUnavailableError). */
  take(accountId: string): Promise<RateLimitState> {
    return new Promise((resolve, reject) => {
      let batch = this.#next.get(accountId);
      if (!batch) this.#next.set(accountId, (batch = { waiters: [] }));
      batch.waiters.push({ resolve, reject });
      if (!this.#flying.has(accountId)) void this.#flush(accountId);
    });
  }

  /** The shared bucket's state without taking a token: one read, no write. */
  async peek(accountId: string): Promise<RateLimitState> {
    const b = refilled(await this.metadata.get(rateLimits, accountId), this.clock.now(), this.pool, this.#perMs);
    return { ok: true, remaining: Math.floor(b.tokens) };
  }

  /** Commits `accountId`'s waiting batch, then the one that gathered meanwhile, until none is left. */
  async #flush(accountId: string): Promise<void> {
    this.#flying.add(accountId);
    try {
      for (let batch = this.#next.get(accountId); batch; batch = this.#next.get(accountId)) {
        this.#next.delete(accountId);
        const wanted = batch.waiters.length;
        const now = this.clock.now();
        try {
          const { before, granted } = await this.metadata.transact(async (tx) => {
            const b = refilled(await tx.get(rateLimits, accountId), now, this.pool, this.#perMs);
            const grant = Math.min(wanted, Math.max(0, Math.floor(b.tokens)));
            tx.put(rateLimits, accountId, { tokens: b.tokens - grant, at: b.at });
            return { before: b.tokens, granted: grant };
          });
          batch.waiters.forEach((w, i) => w.resolve(i < granted ? { ok: true, remaining: Math.floor(before - (i + 1)) } : { ok: false, remaining: 0 }));
        } catch (e) {
          for (const w of batch.waiters) w.reject(e);
        }
      }
    } finally {
      this.#flying.delete(accountId);
    }
  }
}

/**
 * The pools for a server over `metadata`: in memory on the embedded store (`kind` `lmdb`, one
 * node), in the store otherwise (see the top of this file for why).
 * @param pool bucket size, tokens; @param perMinute refill, tokens per minute
 */
export function rateLimitPoolFor(metadata: MetadataStore, clock: Clock, pool: number, perMinute: number): RateLimitPool {
  return metadata.kind === 'lmdb' ? new RateLimiter(clock, pool, perMinute) : new SharedRateLimiter(metadata, clock, pool, perMinute);
}
