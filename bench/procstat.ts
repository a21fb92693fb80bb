/** Server-side resource readings from /proc: CPU time (utime+stime) and resident memory. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticks: number | undefined;

/** Clock ticks per second (`getconf CLK_TCK`, 100 if that fails). */
export function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** CPU seconds (user + system, all threads) used so far by process `pid`. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after "(comm)": state is field 3, utime field 14, stime field 15.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / clockTicks();
}

/** A field of /proc/<pid>/status in kB (VmRSS, VmHWM), or NaN. */
export function statusKb(pid: number, field: string): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/** Samples VmRSS of a process every `intervalMs` and keeps the maximum. */
export class RssSampler {
  #maxKb = 0;
  #samples = 0;
  readonly #timer: NodeJS.Timeout;

  /** Starts sampling `pid` now. */
  constructor(readonly pid: number, intervalMs = 50) {
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), intervalMs);
  }

  #sample(): void {
    try {
      const kb = statusKb(this.pid, 'VmRSS');
      if (kb > this.#maxKb) this.#maxKb = kb;
      this.#samples++;
    } catch {
      // process gone: keep what we have
    }
  }

  /** Stops sampling; returns the peak RSS in MiB and the number of samples taken. */
  stop(): { peakMiB: number; samples: number } {
    clearInterval(this.#timer);
    this.#sample();
    return { peakMiB: Math.round((this.#maxKb / 1024) * 10) / 10, samples: this.#samples };
  }
}
