/**
 * The pull client's own limit, measured in the same run as the pull workloads: the same pulls
 * (one 1 GiB blob; 16 × 64 MiB at once) against a server that serves from memory and does
 * nothing else (servers/trivial-blob.ts, its own process). What a client reaches there is the
 * most it can pull on this machine at that moment, whatever the registry; its CPU per GiB is its
 * own cost, which shares the two CPUs with the server under test.
 *
 * Each is measured in three rounds and the fastest counts: on this shared machine other
 * processes only ever slow a round down, and a limit is the best the client can do.
 *
 * Both clients are measured: `raw` (bench/rawpull.ts, what the pull workloads use) and `undici`
 * (bench/client.ts `fetchCount`, what they used before 2026-11-24), so the README can show what
 * the switch changed.
 */
import { fileURLToPath } from 'node:url';
import { stopChild } from './cleanup.js';
import { spawnTrivial } from './servers/spawn-trivial.js';
import { RegistryClient } from './client.js';
import { CpuWindow, cpuSeconds } from './procstat.js';
import { pullCount } from './rawpull.js';
import { fastestRound, mbPerSecond, round } from './stats.js';

const SERVER = fileURLToPath(new URL('./servers/trivial-blob.js', import.meta.url));
const GiB = 1024 ** 3;

/** One client's pulls from the trivial server. */
export interface PullLimit {
  /** `pull_limit_<client>_<single|concurrent>`. */
  bench: string;
  client: 'raw' | 'undici';
  /** Blobs pulled at once and bytes each. */
  blobs: number;
  blob_bytes: number;
  value: number;
  unit: 'MB/s';
  /** CPU seconds per GiB pulled of the client (this process) and of the trivial server. */
  client_cpu_s_per_gib: number;
  server_cpu_s_per_gib: number;
  other_cpu_pct: number;
  steal_cpu_pct: number;
  /** MB/s of every round (the figure is the fastest's). */
  rounds_mb_s?: number[];
}

/** Rounds of each measurement; the fastest is the limit (contention only ever slows a round). */
const ROUNDS = 3;
/** Bytes of the warm-up pull before the rounds (connections, JIT, the server's buffer). */
const WARMUP_BYTES = 64 * 1024 * 1024;

/**
 * Pulls `blobs` × `size` at once from the trivial server at `port` with `client`, `ROUNDS`
 * times; returns the fastest round, with every round's MB/s in `rounds_mb_s`.
 */
async function measure(port: number, pid: number, client: 'raw' | 'undici', blobs: number, size: number, label: string): Promise<PullLimit> {
  const undici = client === 'undici' ? new RegistryClient(`http://127.0.0.1:${port}`, undefined, blobs) : undefined;
  const one = async (bytes: number) => {
    const url = new URL(`http://127.0.0.1:${port}/${bytes}`);
    const r = undici ? await undici.fetchCount('GET', url, {}, 15_000) : await pullCount(url);
    if (r.status !== 200 || r.bytes !== bytes) throw new Error(`trivial blob server: status ${r.status}, ${r.bytes} of ${bytes} bytes`);
  };
  try {
    await Promise.all(Array.from({ length: blobs }, () => one(Math.min(size, WARMUP_BYTES))));
    const rounds: PullLimit[] = [];
    for (let i = 0; i < ROUNDS; i++) rounds.push(await round1(pid, client, blobs, size, label, () => one(size)));
    return fastestRound(rounds);
  } finally {
    await undici?.close();
  }
}

/** One measured round: `blobs` runs of `one` at once. */
async function round1(pid: number, client: 'raw' | 'undici', blobs: number, size: number, label: string, one: () => Promise<void>): Promise<PullLimit> {
  const window = new CpuWindow(pid);
  const server0 = cpuSeconds(pid);
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: blobs }, one));
  const ms = performance.now() - t0;
  const c = process.cpuUsage(client0);
  const gib = (blobs * size) / GiB;
  const use = window.end();
  return {
    bench: `pull_limit_${client}_${label}`, client, blobs, blob_bytes: size,
    value: mbPerSecond(blobs * size, ms), unit: 'MB/s',
    client_cpu_s_per_gib: round((c.user + c.system) / 1e6 / gib, 2),
    server_cpu_s_per_gib: round((cpuSeconds(pid) - server0) / gib, 2),
    other_cpu_pct: use.other_cpu_pct, steal_cpu_pct: use.steal_cpu_pct,
  };
}

/**
 * Measures both clients pulling one blob of `bigBytes` and `count` × `size` at once from a
 * freshly started trivial server.
 * @throws Error when the server does not start or answers wrongly
 */
export async function measurePullLimit(bigBytes: number, count: number, size: number): Promise<PullLimit[]> {
  const { child, port } = await spawnTrivial(SERVER, 'trivial blob server');
  try {
    const out: PullLimit[] = [];
    for (const client of ['raw', 'undici'] as const) {
      out.push(await measure(port, child.pid!, client, 1, bigBytes, 'single'));
      out.push(await measure(port, child.pid!, client, count, size, 'concurrent'));
    }
    return out;
  } finally {
    await stopChild(child);
  }
}
