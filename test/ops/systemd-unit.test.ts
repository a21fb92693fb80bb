/**
 * The systemd unit deploy/systemd/slipway.service: `systemd-analyze verify` accepts it without a
 * warning (ExecStart pointed at this checkout's CLI, as an installation points it at `slipway`),
 * and the service it describes runs as written: the command line with the settings of
 * deploy/systemd/slipway.env and the unit's Environment= lines starts, and its KillSignal stops
 * it with exit status 0 within TimeoutStopSec even when a request never ends (the drain's
 * slowest case: it runs to SLIPWAY_DRAIN_SECONDS, then cuts). Measured with a 2 s drain; the
 * unit's timeout must cover the env file's drain plus the same overhead.
 * What is not exercised here: the sandboxing options themselves (this machine's PID 1 is not
 * systemd), see docs/operations.md.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { CLI, tempDir } from '../helpers/server.js';
import { basic, createApp, http } from '../helpers/http.js';
import { startUpload } from '../helpers/registry.js';
import { largestUploadFile, startSpawned, waitFor } from '../helpers/harness.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const UNIT = join(root, 'deploy/systemd/slipway.service');
const ENV_FILE = join(root, 'deploy/systemd/slipway.env');

function analyzeSkip(): string | false {
  if (spawnSync('systemd-analyze', ['--version']).status === 0) return false;
  if (process.env.CI) throw new Error('systemd-analyze (Debian package systemd) is required in CI but not installed');
  return 'skipped: systemd-analyze not installed (apt-get install --no-install-recommends systemd)';
}

/** `[Section]` → key → values (a key may repeat: Environment=). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const s = /^\[(.+)\]$/.exec(line);
    if (s) { sections.set(s[1]!, current = new Map()); continue; }
    const eq = line.indexOf('=');
    if (!current || eq < 0) throw new Error(`not a unit line: ${line}`);
    const k = line.slice(0, eq).trim();
    current.set(k, [...(current.get(k) ?? []), line.slice(eq + 1).trim()]);
  }
  return sections;
}

/** KEY=value lines of an EnvironmentFile (comments and blanks skipped). */
function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]!] = m[2]!.trim();
  }
  return env;
}

/** systemd time span (`45`, `45s`, `1min 30s`) in seconds. */
function seconds(span: string): number {
  let total = 0;
  for (const [, n, unit] of span.matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|sec|min|m|h)?/g)) {
    total += Number(n) * ({ ms: 0.001, s: 1, sec: 1, min: 60, m: 60, h: 3600 }[unit ?? 's'] ?? 1);
  }
  return total;
}

const unitText = readFileSync(UNIT, 'utf8');
const service = parseUnit(unitText).get('Service')!;
const one = (k: string) => service.get(k)?.at(-1);

t.test('systemd-analyze verify accepts the unit', { skip: analyzeSkip() }, async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.cleanup());
  const exec = one('ExecStart')!;
  t.match(exec, /^\/\S*slipway serve$/, 'ExecStart runs `slipway serve` by absolute path');
  const local = join(dir.dir, 'slipway.service');
  writeFileSync(local, unitText.replace(/^ExecStart=.*$/m, `ExecStart=${process.execPath} ${CLI} serve`));
  const r = spawnSync('systemd-analyze', ['verify', local], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.equal(r.stderr.trim(), '', 'no warning (an unknown option or a bad value is only a warning)');
});

t.test('the unit\'s command, settings and stop timeout, run as written', async (t) => {
  for (const k of ['User', 'StateDirectory', 'EnvironmentFile', 'Restart', 'NoNewPrivileges', 'ProtectSystem', 'SystemCallFilter']) {
    t.ok(one(k), `${k}= is set`);
  }
  t.equal(one('KillSignal'), 'SIGTERM', 'stops with SIGTERM: the drain');
  t.notOk(service.has('MemoryDenyWriteExecute'), 'V8 needs writable executable memory');
  const fileEnv = parseEnvFile(readFileSync(ENV_FILE, 'utf8'));
  const unitEnv = Object.fromEntries((service.get('Environment') ?? []).map((e) => e.split(/=(.*)/s).slice(0, 2) as [string, string]));
  t.equal(unitEnv.SLIPWAY_DATA, `/var/lib/${one('StateDirectory')}`, 'the data directory is the StateDirectory');
  const drain = Number(fileEnv.SLIPWAY_DRAIN_SECONDS);
  const timeout = seconds(one('TimeoutStopSec')!);
  t.ok(drain > 0, 'the env file states the drain');

  // The service as systemd would start it: `slipway serve` with the env file, then Environment=
  // (later wins), the data directory and ports moved to this test's (the harness's spawn of
  // `serve`), a 2 s drain to measure the overhead.
  t.same(one('ExecStart')!.split(/\s+/).slice(1), ['serve'], 'ExecStart runs `serve` with its settings from the environment');
  const data = tempDir();
  t.teardown(() => data.cleanup());
  const node = await startSpawned({
    dataDir: data.dir, startTimeoutMs: 120_000,
    env: { ...fileEnv, ...unitEnv, SLIPWAY_DATA: data.dir, SLIPWAY_HOST: '127.0.0.1', SLIPWAY_DRAIN_SECONDS: '2', SLIPWAY_LOG_LEVEL: 'warn' },
  });
  t.teardown(() => node.kill());
  const { urls } = node;
  const apiKey = node.apiKey;
  t.ok(apiKey, 'the first start created the operator');
  await waitFor('readiness', async () => (await http('GET', `${urls.admin}/readyz`)).status === 200, { timeoutMs: 60_000 });

  // A request that never ends: an upload body trickling 1 KiB every 100 ms.
  t.equal((await createApp(urls.api, apiKey!, 'never')).status, 201);
  const location = await startUpload({ registry: urls.registry, auth: basic('_', apiKey!) }, 'never/ends');
  const body = request(location, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream' } });
  body.on('error', () => { /* cut by the drain deadline */ });
  const trickle = setInterval(() => body.write(Buffer.alloc(1024, 1)), 100);
  t.teardown(() => clearInterval(trickle));
  await waitFor('the upload to be in flight', () => largestUploadFile(data.dir) > 0, { timeoutMs: 30_000 });

  const t0 = performance.now();
  node.proc.kill(one('KillSignal') as NodeJS.Signals);
  const code = await node.exited;
  const stopS = (performance.now() - t0) / 1000;
  clearInterval(trickle);
  t.equal(code, 0, 'exit status 0: systemd counts a clean stop');
  t.ok(stopS >= 2, `the drain ran to its deadline (${stopS.toFixed(1)} s)`);
  const overhead = stopS - 2;
  t.ok(drain + overhead < timeout, `TimeoutStopSec ${timeout} s > drain ${drain} s + cut and close ${overhead.toFixed(1)} s`);
  t.comment(`stop with a request in flight: ${stopS.toFixed(1)} s with a 2 s drain`);
});
