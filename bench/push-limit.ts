/**
 * The push client's own limit, measured in the same run as the push workloads: the concurrent
 * push (`push_concurrent`'s blobs, POST + PUT with body, the same number in flight, the same
 * client code) against a server that discards what it receives (servers/trivial-sink.ts, its own
 * process). What the client reaches there is the most it pushes this way on this machine at that
 * moment, whatever the registry; its CPU per GiB is its own cost, which shares the two CPUs with
 * the server under test. Fastest of three rounds, as bench/pull-limit.ts.
 */
import { fileURLToPath } from 'node:url';
import { stopChild } from './cleanup.js';
import { spawnTrivial } from './servers/spawn-trivial.js';
import { RegistryClient } from './client.js';
import type { Blob } from './payload.js';
import { CpuWindow, cpuSeconds, ThreadWindow, type ThreadRow } from './procstat.js';
import { fastestRound, mbPerSecond, round } from './stats.js';
import { pushEach } from './workloads/upload.js';

const SERVER = fileURLToPath(new URL('./servers/trivial-sink.js', import.meta.url));
const GiB = 1024 ** 3;
const ROUNDS = 3;

/** The concurrent push against the sink: MB/s of the fastest round, with every round's. */
export interface PushLimit {
  bench: 'push_limit_concurrent';
  value: number;
  unit: 'MB/s';
  blobs: number;
  in_flight: number;
  client_cpu_s_per_gib: number;
  server_cpu_s_per_gib: number;
  other_cpu_pct: number;
  steal_cpu_pct: number;
  rounds_mb_s: number[];
  note: string;
}

/** One round's figures: the push's MB/s, the client's and the server's CPU per GiB, other and steal CPU. */
export type PushRound = Pick<PushLimit, 'value' | 'client_cpu_s_per_gib' | 'server_cpu_s_per_gib' | 'other_cpu_pct' | 'steal_cpu_pct'> & {
  /** The server's CPU per thread over the round, seconds (procstat.ts ThreadWindow). */
  threads: ThreadRow[];
};

/**
 * Pushes `blobs`, `inFlight` at a time, through `client` to the server process `pid`, `ROUNDS`
 * times, each round wrapped by `around` when given: it runs before the round and returns what
 * runs after it, outside the round's time and CPU (as the push workloads' memory handover ends
 * after their figures, bench/run.ts). Shared by this sink and bench/storing-limit.ts.
 * @throws Error when a push is not answered as a registry would
 */
export async function pushRounds(client: RegistryClient, pid: number, blobs: Blob[], inFlight: number, timeoutMs: number, around?: () => Promise<() => Promise<unknown>>): Promise<PushRound[]> {
  const bytes = blobs.reduce((n, b) => n + b.size, 0);
  const rounds: PushRound[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const after = around ? await around() : undefined;
    try {
      const window = new CpuWindow(pid);
      const perThread = new ThreadWindow(pid);
      const server0 = cpuSeconds(pid);
      const client0 = process.cpuUsage();
      const t0 = performance.now();
      await pushEach(client, 'sink/web', blobs, inFlight, timeoutMs);
      const ms = performance.now() - t0;
      const c = process.cpuUsage(client0);
      const use = window.end();
      rounds.push({
        value: mbPerSecond(bytes, ms),
        client_cpu_s_per_gib: round((c.user + c.system) / 1e6 / (bytes / GiB), 2),
        server_cpu_s_per_gib: round((cpuSeconds(pid) - server0) / (bytes / GiB), 2),
        other_cpu_pct: use.other_cpu_pct, steal_cpu_pct: use.steal_cpu_pct,
        threads: perThread.end(),
      });
    } finally {
      await after?.();
    }
  }
  return rounds;
}

/**
 * Pushes `blobs` with `inFlight` at a time to a freshly started sink, `ROUNDS` times.
 * @throws Error when the sink does not start or a push is not answered as a registry would
 */
export async function measurePushLimit(blobs: Blob[], inFlight: number, timeoutMs: number): Promise<PushLimit> {
  const { child, port } = await spawnTrivial(SERVER, 'trivial sink');
  try {
    const sink = new RegistryClient(`http://127.0.0.1:${port}`, undefined, inFlight);
    try {
      const best = fastestRound(await pushRounds(sink, child.pid!, blobs, inFlight, timeoutMs));
      return {
        bench: 'push_limit_concurrent', ...best, unit: 'MB/s', blobs: blobs.length, in_flight: inFlight,
        note: 'the push_concurrent client (POST + PUT with body) against servers/trivial-sink.ts, which discards the bytes: the most this client pushes here',
      };
    } finally {
      await sink.close();
    }
  } finally {
    await stopChild(child);
  }
}
