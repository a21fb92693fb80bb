/**
 * Who the "other processes" are: the CPU of every process on the machine over a window, grouped
 * by what it is, so that a figure measured beside PostgreSQL and Ceph can say which of them was
 * busy (a database session, autovacuum, the object store's OSD, the kernel's writeback).
 *
 * Read from /proc/<pid>/stat (utime + stime of all threads). Processes are grouped by their
 * command name without its numbered suffix (`kworker/1:2` → `kworker`; Node.js's `MainThread` → `node`); PostgreSQL's
 * processes by their title (`postgres: autovacuum worker`, `postgres: checkpointer`; every client
 * session is `postgres: sessions`). A process that ended within the window counts through its
 * parent's reaped children's time (`cutime` + `cstime`), less what it had used when the window
 * started, as `<parent>: ended children`: that is how short-lived autovacuum workers and closed
 * sessions show.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { clockTicks, statFieldsOf } from './procstat.js';

/** One process at one moment: its group, its parent, its own CPU seconds and its reaped children's. */
interface Seen {
  group: string;
  ppid: number;
  own: number;
  children: number;
}

/** PostgreSQL's auxiliary processes by title; any other `postgres:` title is a client session. */
const POSTGRES_AUX = ['autovacuum launcher', 'autovacuum worker', 'checkpointer', 'background writer', 'walwriter', 'logical replication launcher', 'stats collector', 'archiver'];

/** The group of process `pid` named `comm`. */
function groupOf(pid: number, comm: string): string {
  if (comm === 'postgres') {
    let title = '';
    try {
      title = readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ').trim();
    } catch {
      return 'postgres';
    }
    if (!title.startsWith('postgres:')) return 'postgres';
    const aux = POSTGRES_AUX.find((a) => title.includes(a));
    return aux ? `postgres: ${aux}` : 'postgres: sessions';
  }
  // Node.js 24 names a process's main thread, and so its command, `MainThread`.
  if (comm === 'MainThread') return 'node';
  return comm.replace(/[/:].*$/, '').replace(/[.\d]+$/, '') || comm;
}

/** Every readable process now, by pid. */
function snapshot(): Map<number, Seen> {
  const out = new Map<number, Seen>();
  const hz = clockTicks();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const raw = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const comm = raw.slice(raw.indexOf('(') + 1, raw.lastIndexOf(')'));
      const f = statFieldsOf(raw); // ppid 4, utime 14, stime 15, cutime 16, cstime 17
      out.set(pid, { group: groupOf(pid, comm), ppid: Number(f[1]), own: (Number(f[11]) + Number(f[12])) / hz, children: (Number(f[13]) + Number(f[14])) / hz });
    } catch {
      // the process ended between the listing and the read
    }
  }
  return out;
}

/** One group's share of the window: percent of one CPU. */
export interface ProcessCpu {
  process: string;
  cpu_pct: number;
}

/** The CPU of the machine's processes over a window, by group (see the top of this file). */
export class ProcessShare {
  readonly #start = snapshot();
  readonly #t0 = performance.now();

  /** @param exclude pids left out (the server under test and this process, counted apart) */
  constructor(readonly exclude: number[] = [process.pid]) {}

  /** The `top` busiest groups since the window started, at least 1 % of a CPU each, busiest first. */
  end(top = 6): ProcessCpu[] {
    const secs = (performance.now() - this.#t0) / 1000;
    const byGroup = new Map<string, number>();
    const add = (group: string, s: number) => { if (s > 0) byGroup.set(group, (byGroup.get(group) ?? 0) + s); };
    const now = snapshot();
    // A process that ended in the window adds its whole life to its parent's children's time:
    // what it had used by the window's start is not the window's.
    const before = new Map<number, number>();
    for (const [pid, was] of this.#start) {
      if (!now.has(pid)) before.set(was.ppid, (before.get(was.ppid) ?? 0) + was.own + was.children);
    }
    for (const [pid, seen] of now) {
      if (this.exclude.includes(pid)) continue;
      const was = this.#start.get(pid);
      // A process new in the window counts from zero; a pid reused by another process too.
      const same = was !== undefined && was.own <= seen.own && was.group === seen.group;
      add(seen.group, seen.own - (same ? was.own : 0));
      add(`${seen.group}: ended children`, seen.children - (same ? was.children : 0) - (before.get(pid) ?? 0));
    }
    return [...byGroup.entries()]
      .map(([name, s]) => ({ process: name, cpu_pct: Math.round((s / secs) * 100) }))
      .filter((p) => p.cpu_pct >= 1)
      .sort((a, b) => b.cpu_pct - a.cpu_pct)
      .slice(0, top);
  }
}

/** `name 12 %, name 8 %` for a table or a log line. */
export function formatShare(share: ProcessCpu[]): string {
  return share.length === 0 ? '-' : share.map((p) => `${p.process} ${p.cpu_pct} %`).join(', ');
}
