/**
 * Nodes for the cluster benchmark (bench/cluster.ts): `slipway serve` child processes on the
 * embedded store or on one PostgreSQL (test/helpers/postgres.ts) with one server key, and the
 * CPU seconds the PostgreSQL server has used (postmaster and every backend, from /proc).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { collectLines, exitError } from './servers/target.js';
import { slipwayOutput, type SlipwayUrls } from './servers/slipway-output.js';
import { stopChild, trackChild } from './cleanup.js';
import { clockTicks, statFields } from './procstat.js';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The `node` flags the build of `cli` launches its server with (its server/runtime-flags.js,
 * none for a build before that module), so each build of an A/B runs as its own launchers run it.
 */
async function nodeFlagsOf(cli: string): Promise<readonly string[]> {
  const file = join(dirname(cli), 'runtime-flags.js');
  if (!existsSync(file)) return [];
  return ((await import(pathToFileURL(file).href)) as { SERVER_NODE_FLAGS?: readonly string[] }).SERVER_NODE_FLAGS ?? [];
}

const CLI = fileURLToPath(new URL('../server/cli.js', import.meta.url));

/** A running node. */
export interface BenchNode {
  urls: { registry: string; api: string; upload: string; admin: string };
  pid: number;
  /** The operator's API key, when this node created the operator. */
  apiKey?: string;
  stop(): Promise<void>;
}

let nodesStarted = 0;

/**
 * Starts `slipway serve` on `dataDir` with free ports, a node name of its own (`bench-<n>`), plain HTTP on the registry host, warn logs
 * and no rate limit to speak of (the benchmark measures the request paths, not the 429s).
 * `cli` is the build's server/cli.js (default this checkout's; bench/cluster-ab.ts runs two builds).
 * @throws Error with the node's output when it exits or does not listen within 60 s.
 */
export async function startNode(dataDir: string, env: Record<string, string>, cli: string = CLI): Promise<BenchNode> {
  // Nodes on one database need names of their own (engine/blobs/node-claim.ts); all run on this host.
  const name = `bench-${++nodesStarted}`;
  const ports = ['registry', 'api', 'auth', 'upload', 'admin'].flatMap((h) => [`--${h}-port`, '0']);
  const proc = spawn(process.execPath, [...await nodeFlagsOf(cli), cli, 'serve', '--data', dataDir, ...ports], {
    env: {
      ...process.env, SLIPWAY_LOG_LEVEL: 'warn', SLIPWAY_REGISTRY_TLS: 'off',
      SLIPWAY_RATE_LIMIT_POOL: '1000000000', SLIPWAY_RATE_LIMIT_PER_MINUTE: '1000000000', SLIPWAY_NODE_NAME: name, ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(proc);
  const output = slipwayOutput();
  let onListening: (urls: SlipwayUrls) => void = () => {};
  const listening = new Promise<SlipwayUrls>((resolve) => { onListening = resolve; });
  const tail = collectLines(proc, (line) => {
    const urls = output.read(line);
    if (urls) onListening(urls);
  });
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`node did not start within 60 s:\n${tail.join('\n')}`)), 60_000).unref());
  const urls = await Promise.race([listening, exitError(proc, 'slipway', () => tail.join('\n')), timeout]);
  // A node that ends on its own mid-run is a finding, not a connection error to guess at later.
  let stopping = false;
  proc.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`slipway node ${name} (pid ${proc.pid}) exited on its own (code ${code}, signal ${signal}); its last output:\n${tail.join('\n')}\n`);
  });
  return {
    urls: { registry: urls.registry, api: urls.api, upload: urls.upload, admin: urls.admin },
    pid: proc.pid!, apiKey: output.secrets.api_key,
    stop: () => { stopping = true; return stopChild(proc); },
  };
}

/** utime+stime (and, with `children`, cutime+cstime of reaped children) of a process, seconds. */
function procSeconds(pid: number, children: boolean): number {
  try {
    const f = statFields(`/proc/${pid}/stat`).map(Number);
    // utime is field 14 of the file (index 11 here), stime 15, cutime 16, cstime 17.
    return (f[11]! + f[12]! + (children ? f[13]! + f[14]! : 0)) / clockTicks();
  } catch {
    return 0;
  }
}

/**
 * CPU seconds used so far by a PostgreSQL server: its postmaster (with the reaped children's
 * times: backends that ended) plus every live child process (backends, WAL writer,
 * checkpointer…). `postmasterPid` is the first line of `<data>/postmaster.pid`.
 */
export function postgresSeconds(postmasterPid: number): number {
  let total = procSeconds(postmasterPid, true);
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const ppid = Number(statFields(`/proc/${e}/stat`)[1]); // field 4
      if (ppid === postmasterPid) total += procSeconds(Number(e), false);
    } catch { /* process ended between the listing and the read */ }
  }
  return total;
}

/** The postmaster's pid of a data directory (first line of postmaster.pid). */
export function postmasterPid(dataDir: string): number {
  return Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
}
