/** Server-side resource readings from /proc: CPU time (utime+stime) and resident memory. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

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

/**
 * The fields of a /proc stat file after "(comm)": index 0 is field 3 (state), so field N of
 * proc(5) is at index N - 3 (the command name may hold spaces and parentheses).
 */
export function statFields(path: string): string[] {
  return statFieldsOf(readFileSync(path, 'utf8'));
}

/** `statFields` of a stat file's text already read. */
export function statFieldsOf(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** User and system CPU seconds from a /proc stat file (of a process or of one of its threads). */
function statTimes(path: string): { user: number; system: number } {
  const f = statFields(path); // utime field 14, stime field 15
  return { user: Number(f[11]) / clockTicks(), system: Number(f[12]) / clockTicks() };
}

/** CPU seconds (user + system, all threads) used so far by process `pid`. */
export function cpuSeconds(pid: number): number {
  const t = statTimes(`/proc/${pid}/stat`);
  return t.user + t.system;
}

/**
 * Page faults so far of process `pid` (all threads): minor (the page was in memory: the page
 * cache, or a fresh anonymous page) and major (read from disk).
 */
export function pageFaults(pid: number): { minor: number; major: number } {
  const f = statFields(`/proc/${pid}/stat`); // minflt field 10, majflt field 12
  return { minor: Number(f[7]), major: Number(f[9]) };
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

/**
 * CPU seconds of the whole machine so far (all CPUs, first line of /proc/stat): `busy` is time
 * spent running (user, nice, system, irq, softirq; guest time is already in user), `steal` is
 * time the hypervisor gave this VM's CPUs to other guests.
 */
export function systemSeconds(): { busy: number; steal: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return { busy: (v[0]! + v[1]! + v[2]! + v[5]! + v[6]!) / clockTicks(), steal: v[7]! / clockTicks() };
}

/**
 * CPU use over a window, in percent of one CPU: this process (the client), the server, and
 * everything else on the machine (other processes competing for the same CPUs, including the
 * kernel's writeback of written data), and steal (CPU time the hypervisor gave to other guests).
 */
export class CpuWindow {
  readonly #client = process.cpuUsage();
  readonly #server: number;
  readonly #system = systemSeconds();
  readonly #returned = returnedToHostKib();
  readonly #t0 = performance.now();

  /** Starts the window now, for server process `pid`. */
  constructor(readonly pid: number) {
    this.#server = cpuSeconds(pid);
  }

  /**
   * Percentages since the window started, and the MiB of free memory the guest reported to the
   * hypervisor meanwhile (`returnedToHostKib`; null where the kernel has no such counter).
   */
  end(): { client_cpu_pct: number; server_cpu_pct: number; other_cpu_pct: number; steal_cpu_pct: number; returned_to_host_mib: number | null } {
    const secs = (performance.now() - this.#t0) / 1000;
    const c = process.cpuUsage(this.#client);
    const client = (c.user + c.system) / 1e6;
    const server = cpuSeconds(this.pid) - this.#server;
    const now = systemSeconds();
    const other = Math.max(0, now.busy - this.#system.busy - client - server);
    const pct = (x: number) => Math.round((x / secs) * 100);
    const returned = returnedToHostKib();
    const returnedMib = returned === null || this.#returned === null ? null : Math.round((returned - this.#returned) / 1024);
    return { client_cpu_pct: pct(client), server_cpu_pct: pct(server), other_cpu_pct: pct(other), steal_cpu_pct: pct(now.steal - this.#system.steal), returned_to_host_mib: returnedMib };
  }
}

/**
 * KiB of free memory this guest's kernel has reported to the hypervisor since boot (virtio-balloon
 * free page reporting: the host drops those pages, and the next write to one of them faults in
 * the host, costing the writer up to 2.5 s of CPU per GiB here: bench/README.md "The chunked push
 * and memory the VM takes back"), or null where the kernel exposes no such counter.
 */
export function returnedToHostKib(): number | null {
  try {
    const v = Number(readFileSync('/sys/module/page_reporting/parameters/reported_kib', 'utf8').trim());
    return Number.isFinite(v) ? v : null;
  } catch {
    return null;
  }
}

/** CPU seconds of one thread of a process: user and system (kernel work done on its behalf). */
export interface ThreadCpu {
  tid: number;
  user: number;
  system: number;
}

/** Per-thread CPU seconds so far of process `pid` (/proc/<pid>/task/<tid>/stat), by tid. */
export function threadSeconds(pid: number): Map<number, ThreadCpu> {
  const out = new Map<number, ThreadCpu>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(t), { tid: Number(t), ...statTimes(`/proc/${pid}/task/${t}/stat`) });
    } catch {
      // thread exited between the listing and the read
    }
  }
  return out;
}

/** x86-64 syscall numbers a parked thread sits in (`/proc/<pid>/task/<tid>/syscall`). */
const PARKED_IN: Record<string, string> = { '7': 'poll', '202': 'futex', '232': 'epoll', '281': 'epoll', '441': 'epoll' };

/**
 * Where thread `tid` of `pid` is parked now: `epoll` for an event loop (the main thread, a worker
 * thread such as the hash thread, Node's platform timer thread), `futex` for a thread waiting on
 * a condition (libuv's file I/O pool, V8's GC and compiler helpers), `running`, or `?` when
 * unreadable. Node names every thread "node", so this and the cost tell them apart.
 */
function parkedIn(pid: number, tid: number): string {
  try {
    const first = readFileSync(`/proc/${pid}/task/${tid}/syscall`, 'utf8').split(' ', 1)[0]!.trim();
    return PARKED_IN[first] ?? first;
  } catch {
    return '?';
  }
}

/** One thread's CPU over a window (ThreadWindow.end): where it parks, user and system seconds. */
export interface ThreadRow {
  thread: string;
  parked: string;
  user_s: number;
  system_s: number;
}

/**
 * One line's cells for `rows`: the main thread, each thread not parked on a futex (event loops:
 * the hash thread among them), then the futex-parked ones (libuv's file I/O pool, V8's helpers)
 * summed, as user+system seconds.
 */
export function threadCells(rows: ThreadRow[]): string {
  const cell = (u: number, sys: number) => `${u.toFixed(2)}u+${sys.toFixed(2)}s`;
  const parts = rows.filter((r) => r.thread === 'main' || r.parked !== 'futex').map((r) => `${r.thread}${r.thread === 'main' ? '' : ` (${r.parked})`} ${cell(r.user_s, r.system_s)}`);
  const pooled = rows.filter((r) => r.thread !== 'main' && r.parked === 'futex');
  if (pooled.length) parts.push(`${pooled.length} futex threads ${cell(pooled.reduce((n, r) => n + r.user_s, 0), pooled.reduce((n, r) => n + r.system_s, 0))}`);
  return parts.join(', ');
}

/**
 * Per-thread CPU of a process over a window: the main thread (tid = pid) first, then the other
 * threads that used at least 10 ms, busiest first. Node names every thread "node", so each row
 * also says where the thread waits when idle (`parked`: `epoll` for event loops, so a busy
 * non-main `epoll` thread is the hash thread; `futex` for libuv's pool, which carries the kernel
 * time of file writes and syncs, and for V8's GC and compiler helpers, which spend user time).
 */
export class ThreadWindow {
  readonly #start: Map<number, ThreadCpu>;

  constructor(readonly pid: number) {
    this.#start = threadSeconds(pid);
  }

  /** Seconds per thread since the window started: `[{thread, parked, user_s, system_s}]`, main first. */
  end(): ThreadRow[] {
    const rows: Array<ThreadRow & { total: number }> = [];
    for (const [tid, now] of threadSeconds(this.pid)) {
      const was = this.#start.get(tid) ?? { tid, user: 0, system: 0 };
      const user = now.user - was.user;
      const system = now.system - was.system;
      if (tid !== this.pid && user + system < 0.01) continue;
      rows.push({ thread: tid === this.pid ? 'main' : `tid ${tid}`, parked: parkedIn(this.pid, tid), user_s: Math.round(user * 100) / 100, system_s: Math.round(system * 100) / 100, total: user + system });
    }
    rows.sort((a, b) => (a.thread === 'main' ? -1 : b.thread === 'main' ? 1 : b.total - a.total));
    return rows.map(({ thread, parked, user_s, system_s }) => ({ thread, parked, user_s, system_s }));
  }
}
