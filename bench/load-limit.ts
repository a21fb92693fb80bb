/**
 * The machine's limit for the raw keep-alive load workloads (blob HEAD, manifest GET raw),
 * measured in the same run: the same load generator (bench/rawhttp.ts, 64 connections, one
 * thread) against a server that does nothing but answer (servers/trivial-http.ts, its own
 * process). Its req/s is what this client can drive on this machine at that moment, whatever the
 * server; its client CPU per request is the generator's own cost, which shares the CPUs with the
 * server under test. A registry at a given fraction of this limit cannot be more than
 * 1/fraction times faster here, however little it spends per request.
 */
import { fileURLToPath } from 'node:url';
import { stopChild } from './cleanup.js';
import { spawnTrivial } from './servers/spawn-trivial.js';
import { CpuWindow, cpuSeconds } from './procstat.js';
import { buildRequest, RawConnection } from './rawhttp.js';
import { round } from './stats.js';
import { closedLoop } from './workloads/load.js';

const SERVER = fileURLToPath(new URL('./servers/trivial-http.js', import.meta.url));

/** The load generator against the trivial server. */
export interface LoadLimit {
  rps: number;
  p99: number;
  /** CPU microseconds per request of the load generator (this process) and of the trivial server. */
  client_cpu_us_per_request: number;
  server_cpu_us_per_request: number;
  other_cpu_pct: number;
  steal_cpu_pct: number;
}

/**
 * Runs the raw HEAD load of `connections` connections for `durationMs` (after `warmupMs`)
 * against a freshly started trivial server.
 * @throws Error when the server does not start or answers wrongly
 */
export async function measureLoadLimit(connections: number, durationMs: number, warmupMs: number, maxRequests: number): Promise<LoadLimit> {
  const { child, port } = await spawnTrivial(SERVER, 'trivial server');
  try {
    const url = new URL(`http://127.0.0.1:${port}/v2/bench/api/blobs/sha256:${'0'.repeat(64)}`);
    const request = buildRequest('HEAD', url, { authorization: `Basic ${Buffer.from('_:' + 'x'.repeat(40)).toString('base64')}` });
    const conns = Array.from({ length: connections }, () => new RawConnection(url));
    const fn = async (i: number) => (await conns[i]!.send(request, true)).status === 200;
    try {
      await closedLoop(connections, warmupMs, maxRequests, fn);
      const cpu = new CpuWindow(child.pid!);
      const server0 = cpuSeconds(child.pid!);
      const client0 = process.cpuUsage();
      const r = await closedLoop(connections, durationMs, maxRequests, fn);
      if (r.errors > 0) throw new Error(`trivial server: ${r.errors} wrong answers`);
      const c = process.cpuUsage(client0);
      const per = (seconds: number) => round((seconds * 1e6) / Math.max(1, r.requests), 1);
      const use = cpu.end();
      return {
        rps: r.rps, p99: r.p99,
        client_cpu_us_per_request: per((c.user + c.system) / 1e6), server_cpu_us_per_request: per(cpuSeconds(child.pid!) - server0),
        other_cpu_pct: use.other_cpu_pct, steal_cpu_pct: use.steal_cpu_pct,
      };
    } finally {
      for (const c of conns) c.close();
    }
  } finally {
    await stopChild(child);
  }
}
