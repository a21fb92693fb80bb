/**
 * The one injectable clock. Every expiry and retention rule (upload reaping, token lifetimes,
 * image retention) reads time from here so tests can advance it without waiting.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** Wall-clock time. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that tests move by hand; starts at `start` (ms since epoch). */
export class ManualClock implements Clock {
  #t: number;
  constructor(start = Date.now()) { this.#t = start; }
  now(): number { return this.#t; }
  /** Moves time forward by `ms` milliseconds. */
  advance(ms: number): void { this.#t += ms; }
}

/** ISO 8601 UTC timestamp without milliseconds, as the platform API prints them. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
