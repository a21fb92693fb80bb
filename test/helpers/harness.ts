/**
 * The one way tests start Slipway, with two entry points returning the same shape:
 *
 * - `startInProcess`: `startServer` (server/main.ts) in the test process on a ManualClock, so the
 *   server code a test drives counts towards coverage and the test can move time. The default.
 * - `startSpawned`: `slipway serve` as a child process, the way a user runs it. Only for what
 *   needs a separate process: a crash (SIGKILL), signals and drain (SIGTERM), the operator CLI
 *   on a running server, skopeo interop, large uploads, and the server's own output.
 *
 * Both listen on 127.0.0.1 port 0 with a fresh or given data directory, on the embedded store or
 * (`databaseUrl`) a PostgreSQL database that several nodes may share. Waiting for something to
 * happen is `waitFor` (a condition polled with a deadline), never a fixed sleep.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ManualClock } from '../../engine/clock.js';
import type { MetadataStore } from '../../engine/storage/metadata.js';
import { loadConfig } from '../../server/config.js';
import { startServer, type RunningServer } from '../../server/main.js';
import { createLogger } from '../../server/log.js';
import { CLI, tempDir } from './server.js';
import { http } from './http.js';
import { waitFor } from './daemons.js';
import { SERVER_NODE_FLAGS } from '../../server/runtime-flags.js';

export { waitFor };

/** Where a started server listens. */
export interface Urls { registry: string; api: string; auth: string; upload: string; admin: string }

/** The operator account's secrets, as written to the credentials file (spawned) or returned (in-process) at first start. */
export interface Operator { email: string; password: string; totpSecret: string; apiKey: string }

/** What both entry points return. */
export interface Slipway {
  dataDir: string;
  urls: Urls;
  /** The operator's API key, when this start created the operator (first start on the data directory). */
  apiKey?: string;
  email?: string;
  totpSecret?: string;
  password?: string;
  /** Stops the server (spawned: SIGTERM, which drains; in-process: immediate close) and waits; idempotent. */
  stop(): Promise<void>;
}

/** Options of both entry points. */
export interface StartOptions {
  /** Data directory; default a new temporary one, removed by `stop()`. */
  dataDir?: string;
  /** SLIPWAY_* settings (server/config.ts). */
  env?: Record<string, string>;
  /**
   * Cluster mode: keep the metadata in this PostgreSQL database (SLIPWAY_DATABASE_URL; see
   * test/helpers/postgres.ts). Nodes started on one URL serve one platform; give them one
   * `dataDir` too to share the server key and the blob files (the filesystem blob store).
   */
  databaseUrl?: string;
  /** startSpawned: listen flags replacing the defaults (port 0 everywhere), e.g. `{ host: '127.0.0.9', 'registry-port': '443' }`. */
  listen?: Record<string, string>;
  /** startSpawned: how long the process may take to listen (ms; default 60 000). */
  startTimeoutMs?: number;
}

/** The listeners whose ports a spawned server takes as flags (`--registry-port`, …). */
export type HostPort = 'registry' | 'api' | 'auth' | 'upload' | 'admin';

let nodesStarted = 0;

/**
 * The SLIPWAY_* settings of `opts`: `env`, plus SLIPWAY_DATABASE_URL from `databaseUrl`. Nodes on a
 * shared database (`databaseUrl` or `metadata`) get a node name of their own unless `env` names
 * one: every node on one database needs its own (engine/blobs/node-claim.ts), and all nodes of a
 * test run on this host, whose name is the default.
 */
function settingsOf(opts: StartOptions & { metadata?: unknown }): Record<string, string> {
  const shared = opts.databaseUrl !== undefined || opts.metadata !== undefined;
  return {
    ...(shared ? { SLIPWAY_NODE_NAME: `test-${process.pid}-${++nodesStarted}` } : {}),
    ...opts.env,
    ...(opts.databaseUrl === undefined ? {} : { SLIPWAY_DATABASE_URL: opts.databaseUrl }),
  };
}

/** Options only an in-process server has. */
export interface InProcessOptions extends StartOptions {
  /** The clock the server reads; default a new ManualClock at TEST_EPOCH. */
  clock?: ManualClock;
  /**
   * Opens the metadata store the server runs on instead of its data directory's LMDB (two nodes
   * over one PostgreSQL database: `() => PostgresMetadataStore.open({ connectionString })`).
   * The server closes it on stop().
   */
  metadata?: () => Promise<MetadataStore>;
  /** Create the operator account when the store has no account (default true). */
  bootstrap?: boolean;
}

/** A server in the test process. */
export interface InProcessSlipway extends Slipway {
  server: RunningServer;
  /** The clock every expiry and retention rule reads; `clock.advance(ms)` moves it. */
  clock: ManualClock;
  /** The operator created by this start (throws when the data directory already had accounts). */
  operator: Operator;
  /** Shorthands for `urls.api` and `urls.auth`. */
  api: string;
  auth: string;
}

/** A `slipway serve` child process. */
export interface SpawnedSlipway extends Slipway {
  proc: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal) once the process ended. */
  exited: Promise<number | null>;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  /** SIGKILL (crash) and wait. */
  kill(): Promise<void>;
}

/** Where the in-process clock starts unless a test gives one: a fixed Monday 09:00 UTC. */
export const TEST_EPOCH = Date.UTC(2026, 0, 5, 9, 0, 0);

const PORTS = { 'registry-port': '0', 'api-port': '0', 'auth-port': '0', 'upload-port': '0', 'admin-port': '0' };

/**
 * Starts Slipway in this process and waits until its worker pool and hash thread answer (the
 * admin host's readiness checks): worker threads of the test process load tap's module hooks and
 * can take seconds to start on a busy machine, which would otherwise land on a test's first
 * upload. Logging is off unless `env` sets SLIPWAY_LOG_LEVEL (to a SLIPWAY_LOG_FILE: stdout
 * belongs to tap).
 * @throws what `startServer` throws (bad settings, an unusable key file), after removing a temporary data directory.
 */
export async function startInProcess(opts: InProcessOptions = {}): Promise<InProcessSlipway> {
  const tmp = opts.dataDir === undefined ? tempDir() : undefined;
  const dataDir = opts.dataDir ?? tmp!.dir;
  const env = { SLIPWAY_LOG_LEVEL: 'silent', ...settingsOf(opts), SLIPWAY_DATA: dataDir };
  const clock = opts.clock ?? new ManualClock(TEST_EPOCH);
  let server: RunningServer;
  try {
    const config = loadConfig(env, PORTS);
    server = await startServer(config, { clock, log: createLogger(config.logLevel, config.logFile), metadata: opts.metadata, bootstrap: opts.bootstrap });
  } catch (e) {
    tmp?.cleanup();
    throw e;
  }
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= server.close().then(() => tmp?.cleanup()));
  try {
    await waitFor('the worker pool and the hash thread to answer', async () => {
      const checks = (await http('GET', `${server.urls.admin}/readyz`)).json?.checks;
      return checks?.workerPool === 'ok' && checks?.hashThread === 'ok';
    }, { timeoutMs: 120_000, intervalMs: 50 });
  } catch (e) {
    await stop();
    throw e;
  }
  const b = server.bootstrap;
  return {
    dataDir, urls: server.urls, server, clock, api: server.urls.api, auth: server.urls.auth,
    apiKey: b?.apiKey, email: b?.account.email, totpSecret: b?.totpSecret, password: b?.generatedPassword ?? undefined,
    get operator(): Operator {
      if (!b) throw new Error('no operator created by this start: the data directory already had accounts');
      return { email: b.account.email, password: b.generatedPassword!, totpSecret: b.totpSecret, apiKey: b.apiKey };
    },
    stop,
  };
}

/** One line of a server's output as a JSON log entry, or undefined when it is not one. */
export function logLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try { return JSON.parse(line) as Record<string, unknown>; } catch { return undefined; }
}

/** The operator's credentials from the file a start wrote (server/ops/operator-credentials.ts). */
export function readCredentials(file: string): Operator {
  const c = JSON.parse(readFileSync(file, 'utf8')) as { email: string; password: string; totp_secret: string; api_key: string };
  return { email: c.email, password: c.password, totpSecret: c.totp_secret, apiKey: c.api_key };
}

/**
 * Bytes in the largest upload-session file of a data directory (0 when none): how far the
 * upload in flight has come, for a `waitFor` condition.
 */
export function largestUploadFile(dataDir: string): number {
  let max = 0;
  try {
    for (const f of readdirSync(join(dataDir, 'uploads'))) max = Math.max(max, statSync(join(dataDir, 'uploads', f)).size);
  } catch { /* no uploads directory yet */ }
  return max;
}

const children = new Set<ChildProcess>();
let hooked = false;
/** Child servers die with the test process, also when tap ends it on a timeout (SIGTERM). */
function trackChild(proc: ChildProcess): void {
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  if (hooked) return;
  hooked = true;
  const killAll = () => { for (const c of children) c.kill('SIGKILL'); };
  process.once('exit', killAll);
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => { killAll(); process.exit(1); });
}

/**
 * Starts `slipway serve` as a child process and reads its URLs from its output and, when this
 * start issued the operator's credentials, those from the file its output names. Log level: SLIPWAY_TEST_LOG_LEVEL, default warn, unless `env` sets one.
 * @throws Error with the server's output when it exits before listening or does not listen within
 *         `startTimeoutMs` (60 s: a loaded CI machine can take tens of seconds), killing it then.
 */
export function startSpawned(opts: StartOptions = {}): Promise<SpawnedSlipway> {
  const tmp = opts.dataDir === undefined ? tempDir() : undefined;
  const dataDir = opts.dataDir ?? tmp!.dir;
  const flags = Object.entries({ ...PORTS, ...opts.listen }).flatMap(([k, v]) => [`--${k}`, v]);
  const proc = spawn(process.execPath, [...SERVER_NODE_FLAGS, CLI, 'serve', '--data', dataDir, ...flags], {
    env: { ...process.env, SLIPWAY_LOG_LEVEL: process.env.SLIPWAY_TEST_LOG_LEVEL ?? 'warn', ...settingsOf(opts) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  void exited.then(() => tmp?.cleanup());
  trackChild(proc);
  return new Promise((resolve, reject) => {
    let out = '';
    let parsed = 0;
    let operator: Partial<Operator> = {};
    // A child that did not listen in time is killed: left running, its pipes would keep the test
    // process alive until tap's own timeout.
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`server did not start within ${(opts.startTimeoutMs ?? 60_000) / 1000} s:\n${out}`)); }, opts.startTimeoutMs ?? 60_000);
    proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      // Every line `serve` prints is a JSON log line: the bootstrap notice names the credentials
      // file (the secrets are never printed), the "slipway listening" line carries the URLs.
      const end = out.lastIndexOf('\n') + 1;
      for (const line of out.slice(parsed, end).split('\n')) {
        const entry = logLine(line);
        if (typeof entry?.credentialsFile === 'string') operator = readCredentials(entry.credentialsFile);
        if (entry?.msg !== 'slipway listening') continue;
        clearTimeout(timer);
        resolve({
          dataDir, urls: entry.urls as Urls, ...operator, proc, exited, output: () => out,
          stop: async () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM'); await exited; },
          kill: async () => { proc.kill('SIGKILL'); await exited; },
        });
      }
      parsed = end;
    });
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}:\n${out}`)); });
  });
}
