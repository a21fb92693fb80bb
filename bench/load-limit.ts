/**
 * The machine's limit for the load workloads, measured in the same run: the same load generator
 * against a server that does nothing but answer (servers/trivial-http.ts, its own process).
 * - `raw`: the raw keep-alive client (bench/rawhttp.ts, 64 connections, one thread) sending blob
 *   HEADs, the limit of `blob_head_64c` and `manifest_get_64c_raw`;
 * - `undici`: the undici Pool of `manifest_get_64c` (bench/client.ts `fetchCount`) sending
 *   manifest GETs, answered with a body of the bench image's manifest size.
 * Its req/s is what that client can drive on this machine at that moment, whatever the server;
 * its client CPU per request is the generator's own cost, which shares the CPUs with the server
 * under test. A registry at a given fraction of this limit cannot be more than 1/fraction times
 * faster here, however little it spends per request, nor its p99 lower than the limit's by more
 * than the client's own queueing allows.
 */
import { fileURLToPath } from 'node:url';
import { stopChild } from './cleanup.js';
import { spawnTrivial } from './servers/spawn-trivial.js';
import { CpuWindow, cpuSeconds } from './procstat.js';
import { RegistryClient } from './client.js';
import { MANIFEST_V2 } from './image.js';
import { buildRequest, RawConnection } from './rawhttp.js';
import { round } from './stats.js';
import { closedLoop } from './workloads/load.js';

const SERVER = fileURLToPath(new URL('./servers/trivial-http.js', import.meta.url));

/** Which load generator: the raw keep-alive HEAD client, or undici's Pool sending manifest GETs. */
export type LoadClient = 'raw' | 'undici';

/** The load generator against the trivial server. */
export interface LoadLimit {
  client: LoadClient;
  rps: number;
  p99: number;
  /** CPU microseconds per request of the load generator (this process) and of the trivial server. */
  client_cpu_us_per_request: number;
  server_cpu_us_per_request: number;
  other_cpu_pct: number;
  steal_cpu_pct: number;
}

/**
 * Runs `client`'s load of `connections` connections for `durationMs` (after `warmupMs`) against a
 * freshly started trivial server; `bodyBytes` is the size of a GET's answer (undici only).
 * @throws Error when the server does not start or answers wrongly
 */
export async function measureLoadLimit(client: LoadClient, connections: number, durationMs: number, warmupMs: number, maxRequests: number, bodyBytes = 1024): Promise<LoadLimit> {
  const { child, port } = await spawnTrivial(SERVER, 'trivial server', [String(bodyBytes)]);
  const base = `http://127.0.0.1:${port}`;
  const authorization = `Basic ${Buffer.from('_:' + 'x'.repeat(40)).toString('base64')}`;
  let fn: (i: number) => Promise<boolean>;
  let close: () => Promise<void>;
  if (client === 'raw') {
    const url = new URL(`${base}/v2/bench/api/blobs/sha256:${'0'.repeat(64)}`);
    const request = buildRequest('HEAD', url, { authorization });
    const conns = Array.from({ length: connections }, () => new RawConnection(url));
    fn = async (i) => (await conns[i]!.send(request, true)).status === 200;
    close = async () => { for (const c of conns) c.close(); };
  } else {
    const pool = new RegistryClient(base, authorization, connections);
    const url = pool.resolve('/v2/bench/api/manifests/latest');
    const headers = { accept: MANIFEST_V2 };
    fn = async () => {
      const r = await pool.fetchCount('GET', url, headers);
      return r.status === 200 && r.bytes === bodyBytes;
    };
    close = () => pool.close();
  }
  try {
    try {
      await closedLoop(connections, warmupMs, maxRequests, fn);
      const cpu = new CpuWindow(child.pid!);
      const server0 = cpuSeconds(child.pid!);
      const client0 = process.cpuUsage();
      const r = await closedLoop(connections, durationMs, maxRequests, fn);
      if (r.errors > 0) throw new Error(`trivial server: ${r.errors} wrong answers${r.firstError ? ` (first: ${r.firstError})` : ''}`);
      const c = process.cpuUsage(client0);
      const per = (seconds: number) => round((seconds * 1e6) / Math.max(1, r.requests), 1);
      const use = cpu.end();
      return {
        client, rps: r.rps, p99: r.p99,
        client_cpu_us_per_request: per((c.user + c.system) / 1e6), server_cpu_us_per_request: per(cpuSeconds(child.pid!) - server0),
        other_cpu_pct: use.other_cpu_pct, steal_cpu_pct: use.steal_cpu_pct,
      };
    } finally {
      await close();
    }
  } finally {
    await stopChild(child);
  }
}
