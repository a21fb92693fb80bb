/** Latency statistics. */

/** Percentile `p` (0-100, nearest rank) of the first `n` values of `samples` (sorted in place). */
export function percentile(samples: Float64Array, n: number, p: number): number {
  if (n === 0) return NaN;
  const view = samples.subarray(0, n);
  view.sort();
  const rank = Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1));
  return view[rank]!;
}

/** p50 and p99 (ms, 3 decimals) of the first `n` samples. */
export function latencySummary(samples: Float64Array, n: number): { p50: number; p99: number } {
  return { p50: round(percentile(samples, n, 50), 3), p99: round(percentile(samples, n, 99), 3) };
}

/** `v` rounded to `digits` decimals. */
export function round(v: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** MB/s (10^6 bytes per second) for `bytes` moved in `ms`. */
export function mbPerSecond(bytes: number, ms: number): number {
  return round(bytes / 1e6 / (ms / 1000), 1);
}

/** The fastest of `rounds` (highest `value`, MB/s), with every round's value beside it in `rounds_mb_s`. */
export function fastestRound<T extends { value: number }>(rounds: readonly T[]): T & { rounds_mb_s: number[] } {
  return { ...rounds.reduce((a, b) => (b.value > a.value ? b : a)), rounds_mb_s: rounds.map((r) => r.value) };
}
