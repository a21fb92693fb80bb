/**
 * OAuth benchmarks: starts `slipway serve` as a child process on loopback with a
 * rate-limit pool large enough not to interfere, then drives it with autocannon and prints one
 * JSON line per workload:
 *
 *   bearer-get-account  GET /account with a bearer token (token hash → 2 LMDB reads, scope
 *                       check, rate limit, JSON + ETag); 64 connections; target ≥ 20,000
 *                       req/s with p99 ≤ 5 ms
 *   refresh-grant       POST /oauth/token grant_type=refresh_token (client authentication,
 *                       one LMDB write transaction per request); target ≥ 2,000 req/s
 *
 * The refresh token comes from the real web flow (sign-in with password and TOTP, consent,
 * code exchange).
 *
 * Load generator: `wrk` when it is on PATH (C, one thread: it leaves the second core to the
 * server), else autocannon (npm, in this process). On a 2-core machine autocannon itself needs
 * most of a core, so its figures measure the client as much as the server; each line names the
 * client used. Usage: `npx tsc -p . && node dist/bench/oauth.js [--duration 10]
 * [--connections 64] [--warmup 2] [--client wrk|autocannon]`. Durations are seconds.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { totpCode } from '../engine/identity/totp.js';
import { CpuWindow } from './procstat.js';
import { startSlipway, type SlipwayTarget } from './servers/slipway.js';
import { installCleanup } from './cleanup.js';

const V3 = 'application/vnd.slipway+json; version=3';

/** What the workloads need of the running server. */
interface Server {
  api: string;
  auth: string;
  apiKey: string;
  email: string;
  password: string;
  totpSecret: string;
}

/** Cookie-carrying fetch without redirects. */
async function step(url: string, cookie: string, form?: Record<string, string>): Promise<{ status: number; location: string; text: string; cookie: string }> {
  const res = await fetch(url, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: { ...(cookie ? { cookie } : {}), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: form ? new URLSearchParams(form).toString() : undefined,
  });
  const set = res.headers.get('set-cookie');
  return { status: res.status, location: res.headers.get('location') ?? '', text: await res.text(), cookie: set ? set.split(';')[0]! : cookie };
}

const hidden = (html: string) => Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>')]));

/** Registers a client and walks the web flow once. @returns the client secret and a refresh token. */
async function obtainRefreshToken(s: Server): Promise<{ secret: string; refreshToken: string }> {
  const reg = await fetch(`${s.api}/oauth/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.apiKey}`, accept: V3, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', redirect_uri: 'http://127.0.0.1:9/cb' }),
  });
  const client = (await reg.json()) as { id: string; secret: string };
  const login = await step(`${s.auth}/login`, '');
  const signedIn = await step(`${s.auth}/login`, login.cookie, {
    ...hidden(login.text), email: s.email, password: s.password, code: totpCode(s.totpSecret, Date.now()),
  });
  if (signedIn.status !== 303) throw new Error(`sign-in failed (${signedIn.status})`);
  const consent = await step(`${s.auth}/oauth/authorize?client_id=${client.id}&response_type=code&scope=identity`, signedIn.cookie);
  const approved = await step(`${s.auth}/oauth/authorize`, signedIn.cookie, { ...hidden(consent.text), owner: 'personal', decision: 'allow' });
  const code = new URL(approved.location).searchParams.get('code');
  if (!code) throw new Error(`no code (${approved.status} ${approved.location})`);
  const tok = await fetch(`${s.auth}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_secret: client.secret }).toString(),
  });
  const body = (await tok.json()) as { refresh_token: string };
  return { secret: client.secret, refreshToken: body.refresh_token };
}

interface Workload {
  name: string;
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  target: { rps: number; p99Ms?: number };
}

/** What either load generator reports. Latencies in ms. */
interface LoadResult {
  requests: number;
  rps: number;
  latency: { p50: number; p90: number; p99: number; max: number };
  non2xx: number;
  errors: number;
}

async function runAutocannon(w: Workload, connections: number, duration: number): Promise<LoadResult> {
  const r = await autocannon({ url: w.url, method: w.method, headers: w.headers, body: w.body, connections, pipelining: 1, duration });
  return {
    requests: r.requests.total, rps: Math.round(r.requests.average),
    latency: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    non2xx: r.non2xx, errors: r.errors + r.timeouts,
  };
}

/** wrk latency value ("850.00us", "3.66ms", "1.02s") in ms. */
function wrkMs(v: string | undefined): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v ?? '');
  if (!m) return NaN;
  return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
}

function runWrk(w: Workload, connections: number, duration: number, dir: string): Promise<LoadResult> {
  const script = join(dir, `${w.name}.lua`);
  const lines = [`wrk.method = ${JSON.stringify(w.method)}`, ...Object.entries(w.headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)];
  if (w.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(w.body)}`);
  writeFileSync(script, lines.join('\n') + '\n');
  const args = ['-t1', `-c${connections}`, `-d${duration}s`, '--latency', '-s', script, w.url];
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { timeout: (duration + 30) * 1000 }, (err, out) => {
      if (err) return reject(new Error(`wrk failed: ${err.message}`));
      const pct = (p: string) => wrkMs(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1]);
      const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      resolve({
        requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN),
        rps: Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN)),
        latency: { p50: pct('50'), p90: pct('90'), p99: pct('99'), max: wrkMs(/Latency\s+\S+\s+\S+\s+(\S+)/.exec(out)?.[1]) },
        non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
        errors: socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
      });
    });
  });
}

/** Runs one workload after a warm-up and prints its JSON line. */
async function measure(w: Workload, client: 'wrk' | 'autocannon', connections: number, duration: number, warmup: number, dir: string, serverPid: number): Promise<void> {
  const run = (d: number) => (client === 'wrk' ? runWrk(w, connections, d, dir) : runAutocannon(w, connections, d));
  if (warmup > 0) await run(warmup);
  const window = new CpuWindow(serverPid);
  const r = await run(duration);
  const cpu = window.end();
  const met = r.rps >= w.target.rps && (w.target.p99Ms === undefined || r.latency.p99 <= w.target.p99Ms) && r.non2xx === 0 && r.errors === 0;
  console.log(JSON.stringify({
    bench: w.name, client, connections, duration_s: duration, requests: r.requests, requests_per_s: r.rps,
    latency_ms: r.latency, non_2xx: r.non2xx, errors: r.errors,
    target: { requests_per_s: w.target.rps, ...(w.target.p99Ms === undefined ? {} : { p99_ms: w.target.p99Ms }) }, met,
    // Server CPU per request is the figure contention moves least; steal is CPU the hypervisor
    // gave to other guests; "other" includes wrk (a separate process).
    server_cpu_pct: cpu.server_cpu_pct, server_cpu_us_per_request: r.rps > 0 ? Math.round((cpu.server_cpu_pct / 100 / r.rps) * 1e6 * 10) / 10 : null,
    other_cpu_pct: cpu.other_cpu_pct + (client === 'autocannon' ? cpu.client_cpu_pct : 0), steal_cpu_pct: cpu.steal_cpu_pct,
    machine: { cpus: cpus().length, node: process.version },
  }));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '64' }, warmup: { type: 'string', default: '2' }, client: { type: 'string' } },
  });
  const duration = Number(values.duration);
  const connections = Number(values.connections);
  const warmup = Number(values.warmup);
  if (!(duration > 0 && connections > 0 && warmup >= 0)) throw new Error('--duration and --connections must be positive numbers, --warmup zero or more');
  const haveWrk = spawnSync('wrk', ['--version']).error === undefined;
  const client = values.client ?? (haveWrk ? 'wrk' : 'autocannon');
  if (client !== 'wrk' && client !== 'autocannon') throw new Error('--client must be wrk or autocannon');
  if (client === 'wrk' && !haveWrk) throw new Error('--client wrk: wrk is not installed (apt-get install wrk)');
  installCleanup(); // the server child is stopped on every exit path
  const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-oauth-'));
  let target: SlipwayTarget | undefined;
  try {
    target = await startSlipway({ SLIPWAY_RATE_LIMIT_POOL: '1000000000', SLIPWAY_RATE_LIMIT_PER_MINUTE: '1000000000' });
    const server: Server = { api: target.urls.api, auth: target.urls.auth, ...target.operator };
    const { secret, refreshToken } = await obtainRefreshToken(server);
    await measure({
      name: 'bearer-get-account', url: `${server.api}/account`, method: 'GET',
      headers: { authorization: `Bearer ${server.apiKey}`, accept: V3 }, target: { rps: 20_000, p99Ms: 5 },
    }, client, connections, duration, warmup, dir, target.pid);
    await measure({
      name: 'refresh-grant', url: `${server.auth}/oauth/token`, method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_secret: secret }).toString(),
      target: { rps: 2_000 },
    }, client, connections, duration, warmup, dir, target.pid);
  } finally {
    await target?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(`bench/oauth: ${(e as Error).message}`);
  process.exit(1);
});
