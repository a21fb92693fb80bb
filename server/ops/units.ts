/** Sizes and durations as the operator commands print them. */

/** `n` bytes in B, KiB, MiB or GiB (binary units, one or two decimals). */
export function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : n < 1024 ** 3 ? `${(n / 1024 ** 2).toFixed(1)} MiB` : `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/** `ms` milliseconds as its largest whole units: `0 s`, `90 s` → `1 min 30 s`, `1 h`, `2 d 3 h`. */
export function duration(ms: number): string {
  let s = Math.round(ms / 1000);
  if (s === 0) return ms > 0 ? `${ms} ms` : '0 s';
  const parts: string[] = [];
  for (const [unit, size] of [['d', 86_400], ['h', 3_600], ['min', 60], ['s', 1]] as const) {
    if (s >= size) { parts.push(`${Math.floor(s / size)} ${unit}`); s %= size; }
  }
  return parts.join(' ');
}
