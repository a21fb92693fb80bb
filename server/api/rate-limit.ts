/**
 * Per-account API rate limit (docs/platform-conventions.md 1.6): a token bucket of `pool` tokens (4500 by
 * default) refilled continuously at `perMinute` (75) per minute up to the pool size; each
 * counted request takes one token; an empty bucket answers 429 `rate_limit`. Remaining tokens
 * go out in `RateLimit-Remaining`. Time comes from the injectable clock.
 *
 * Buckets live in this process's memory (our decision): a restart refills every pool. A
 * replicated deployment would move them to a shared store behind the same two methods.
 */
import type { Clock } from '../../engine/clock.js';

interface Bucket {
  tokens: number;
  at: number;
}

/** Result of a take or peek: whether the request may proceed, and what is left (whole tokens). */
export interface RateLimitState {
  ok: boolean;
  remaining: number;
}

/** Above this many buckets, full ones are dropped (a full bucket equals no bucket). */
const SWEEP_ABOVE = 10_000;

export class RateLimiter {
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
