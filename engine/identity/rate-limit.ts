/**
 * Per-account API rate limit (docs/platform-conventions.md 1.6): a token bucket of `pool` tokens
 * (4500 by default) refilled continuously at `perMinute` (75) per minute up to the pool size;
 * each counted request takes one token; an empty bucket answers 429 `rate_limit`. Remaining
 * tokens go out in `RateLimit-Remaining`. Time comes from the injectable clock.
 *
 * Two implementations of one `RateLimitPool`, chosen by the metadata store (`rateLimitPoolFor`,
 * shared-rate-limit.ts):
 * - `RateLimiter`, buckets in this process's memory, for the embedded store. An LMDB store is one
 *   node, so its memory *is* the whole installation: exact, and no write on the request path
 *   (a restart refills every pool; our decision).
 * - `SharedRateLimiter` (shared-rate-limit.ts), buckets in the metadata store, for a networked
 *   store (a cluster): one pool per account across every node, the header exact cluster-wide.
 */
import type { Clock } from '../clock.js';
import type { Bucket } from './records.js';

export type { Bucket };

/** Result of a take or peek: whether the request may proceed, and what is left (whole tokens). */
export interface RateLimitState {
  ok: boolean;
  remaining: number;
}

/** Per-account pools behind the API and token hosts; either implementation may answer at once or later. */
export interface RateLimitPool {
  /** Takes one token from `accountId`'s bucket. */
  take(accountId: string): RateLimitState | Promise<RateLimitState>;
  /** The bucket's state without taking a token (`GET /account/rate-limits` does not count). */
  peek(accountId: string): RateLimitState | Promise<RateLimitState>;
}

/**
 * `b` (or a full bucket when absent) refilled to `now` at `perMs` tokens per ms, never above
 * `pool`; a bucket stamped later than `now` (another node's clock ahead) is taken as is.
 */
export function refilled(b: Bucket | undefined, now: number, pool: number, perMs: number): Bucket {
  if (!b) return { tokens: pool, at: now };
  if (now <= b.at) return { tokens: Math.min(pool, b.tokens), at: b.at };
  return { tokens: Math.min(pool, b.tokens + (now - b.at) * perMs), at: now };
}

/** Above this many buckets, full ones are dropped (a full bucket equals no bucket). */
const SWEEP_ABOVE = 10_000;

/** Buckets in this process's memory (the embedded store's pools; see the top of this file). */
export class RateLimiter implements RateLimitPool {
  readonly #buckets = new Map<string, Bucket>();
  readonly #perMs: number;

  /**
   * @param pool bucket size, tokens
   * @param perMinute refill rate, tokens per minute
   */
  constructor(readonly clock: Clock, readonly pool: number, readonly perMinute: number) {
    this.#perMs = perMinute / 60_000;
  }

  /** Takes one token from `accountId`'s bucket. */
  take(accountId: string): RateLimitState {
    const b = this.#refilled(accountId);
    if (b.tokens < 1) return { ok: false, remaining: 0 };
    b.tokens -= 1;
    if (!this.#buckets.has(accountId)) this.#store(accountId, b);
    return { ok: true, remaining: Math.floor(b.tokens) };
  }

  /** The bucket's state without taking a token (`GET /account/rate-limits` does not count). */
  peek(accountId: string): RateLimitState {
    return { ok: true, remaining: Math.floor(this.#refilled(accountId).tokens) };
  }

  #refilled(accountId: string): Bucket {
    const now = this.clock.now();
    const b = this.#buckets.get(accountId);
    if (!b) return { tokens: this.pool, at: now };
    if (now > b.at) {
      b.tokens = Math.min(this.pool, b.tokens + (now - b.at) * this.#perMs);
      b.at = now;
    }
    return b;
  }

  #store(accountId: string, b: Bucket): void {
    if (this.#buckets.size >= SWEEP_ABOVE) {
      const now = this.clock.now();
      for (const [id, x] of this.#buckets) if (x.tokens + (now - x.at) * this.#perMs >= this.pool) this.#buckets.delete(id);
    }
    this.#buckets.set(accountId, b);
  }
}
