/**
 * Installing and starting Slipway the ways an operator does, with the real npm:
 *   - the package `npm pack` makes holds the built CLI (with its `#!/usr/bin/env -S node <flags>`
 *     line: server/runtime-flags.ts),
 *     the engine, the workers and the sign-in views, and no tests;
 *   - `npm install -g` of that package puts `slipway` on PATH, and `slipway serve` from there
 *     starts, writes the operator's credentials file and stops on SIGTERM, every line it prints
 *     (start-up and shutdown) a JSON log line;
 *   - `npm start` with nothing changed since the last build starts without compiling again
 *     (`tsc -b` finds the build up to date; it used to recompile every start: 92 s under load).
 * The global install takes its dependencies from npm's cache (warm after `npm ci`) or the registry.
 */
import t from 'tap';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/server.js';
import { logLine, waitFor } from '../helpers/harness.js';
import { SERVER_SHEBANG } from '../../server/runtime-flags.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PORTS = ['--registry-port', '0', '--api-port', '0', '--auth-port', '0', '--upload-port', '0', '--admin-port', '0'];
const NPM_TIMEOUT_MS = 300_000;

/** Runs a command to its end: exit code and output. */
function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, maxBuffer: 64 * 1024 * 1024, timeout: NPM_TIMEOUT_MS }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** A long-running child (its own process group, so SIGTERM reaches npm's children too) and its stdout so far. */
function start(cmd: string, args: string[], env: NodeJS.ProcessEnv): { proc: ChildProcess; out: () => string; exited: Promise<number | null> } {
  const proc = spawn(cmd, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  const exited = new Promise<number | null>((resolve) => proc.once('close', (code) => resolve(code)));
  t.teardown(() => { if (proc.exitCode === null && proc.signalCode === null) process.kill(-proc.pid!, 'SIGKILL'); });
  return { proc, out: () => out + (err ? `\n[stderr]\n${err}` : ''), exited };
}

const listening = (out: string) => out.split('\n').map(logLine).find((l) => l?.msg === 'slipway listening');

t.test('npm pack: the built CLI, engine, workers and views; no tests', async (t) => {
  const r = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts']);
  t.equal(r.code, 0, 'npm pack --dry-run succeeds', { stderr: r.stderr.slice(-2000) });
  const files = (JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
  for (const f of ['dist/server/cli.js', 'dist/server/main.js', 'dist/workers/tasks.js', 'dist/engine/store.js', 'server/auth-host/views/layout.eta', 'package.json']) t.ok(files.includes(f), `holds ${f}`);
  t.same(files.filter((f) => f.startsWith('dist/test/') || f.startsWith('dist/bench/') || f.endsWith('.ts')), [], 'no tests, benchmarks or sources');
  const first = readFileSync(join(ROOT, 'dist/server/cli.js'), 'utf8').split('\n')[0];
  t.equal(first, SERVER_SHEBANG, 'the bin starts with its interpreter line and the runtime flags');
});

t.test('npm install -g: slipway on PATH; serve prints only JSON lines from start to stop', async (t) => {
  const tmp = tempDir('slipway-install-');
  t.teardown(() => tmp.cleanup());
  const packed = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', tmp.dir]);
  t.equal(packed.code, 0, 'npm pack succeeds', { stderr: packed.stderr.slice(-2000) });
  const tarball = join(tmp.dir, packed.stdout.trim().split('\n').pop()!);
  const prefix = join(tmp.dir, 'prefix');
  const installed = await run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: tmp.dir });
  t.equal(installed.code, 0, 'npm install -g succeeds', { stderr: installed.stderr.slice(-2000) });
  const env = { ...process.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH}`, SLIPWAY_LOG_LEVEL: 'warn' };
  const help = await run('slipway', ['--help'], { cwd: tmp.dir, env });
  t.equal(help.code, 0, 'slipway --help runs from PATH');
  t.match(help.stdout, /slipway serve/);

  const data = join(tmp.dir, 'data');
  const server = start('slipway', ['serve', '--data', data, ...PORTS], env);
  const up = await waitFor('the listening line', () => listening(server.out()), { timeoutMs: 120_000, intervalMs: 50 });
  t.ok(up, 'it listens');
  t.ok(existsSync(join(data, 'operator-credentials.json')), 'the operator credentials file is written');
  process.kill(server.proc.pid!, 'SIGTERM');
  t.equal(await server.exited, 0, 'SIGTERM: drained and exited 0');
  const lines = server.out().split('\n').filter((l) => l !== '');
  t.same(lines.filter((l) => logLine(l) === undefined), [], 'every line it printed is a JSON log line');
  const msgs = lines.map((l) => logLine(l)?.msg as string);
  t.ok(msgs.some((m) => /^operator account ready/.test(m)), 'the bootstrap notice');
  t.ok(msgs.some((m) => /^SIGTERM received, draining/.test(m)), 'the signal');
  t.ok(msgs.some((m) => /^drained, stopped/.test(m)), 'the stop');
});

t.test('npm start with nothing changed does not compile again', async (t) => {
  const built = await run('npx', ['tsc', '-b']);
  t.equal(built.code, 0, 'the build is up to date first', { stdout: built.stdout.slice(-2000) });
  const outputs = ['dist/server/cli.js', 'dist/engine/store.js', 'dist/tsconfig.tsbuildinfo'].map((f) => join(ROOT, f));
  const before = outputs.map((f) => statSync(f).mtimeMs);
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const started = performance.now();
  const server = start('npm', ['start', '--silent', '--', '--data', tmp.dir, ...PORTS], { ...process.env, SLIPWAY_LOG_LEVEL: 'warn' });
  await waitFor('the listening line', () => listening(server.out()), { timeoutMs: 120_000, intervalMs: 50 });
  t.comment(`npm start listened after ${Math.round(performance.now() - started)} ms`);
  t.same(outputs.map((f) => statSync(f).mtimeMs), before, 'no build output was written');
  process.kill(-server.proc.pid!, 'SIGTERM');
  await server.exited;
});
