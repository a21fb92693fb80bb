/**
 * The `slipway` command line as a child process for the configuration tests: commands run with
 * an environment free of the test's own SLIPWAY_* variables, `serve` stopped at teardown, and
 * readiness and bound ports checked by connecting (not by reading the start-up lines).
 */
import type { Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { CLI, runCli } from './server.js';
import { freePort, waitFor } from './daemons.js';

/** Environment of every child: no SLIPWAY_* setting of the test's own environment leaks in. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SLIPWAY_')) as [string, string][]);
  return { ...env, SLIPWAY_LOG_LEVEL: 'warn', ...extra };
}

/** Runs one command to its end with a clean environment. */
export const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, cleanEnv(env), { inheritEnv: false });

/** Status and selected headers of a GET on 127.0.0.1:port, or the connection error's code. */
export function get(port: number, path: string): Promise<{ status: number; headers: Record<string, unknown> } | { error: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.end();
  });
}

/** `slipway serve` with these arguments and environment; stopped (SIGTERM, then SIGKILL) at teardown. */
export function serve(t: Test, args: string[], env: Record<string, string>): { proc: ChildProcess; output: () => string } {
  const proc = spawn(process.execPath, [CLI, 'serve', ...args], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise((r) => proc.once('exit', r));
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  });
  return { proc, output: () => out };
}

/** Waits until the admin listener on `adminPort` answers /healthz (60 s at most; fails at once if the process exits). */
export async function ready(s: { proc: ChildProcess; output: () => string }, adminPort: number): Promise<void> {
  await waitFor('the server to answer /healthz', async () => {
    const r = await get(adminPort, '/healthz');
    return 'status' in r && r.status === 200;
  }, { timeoutMs: 60_000, abort: () => (s.proc.exitCode !== null ? `it exited with ${s.proc.exitCode}:\n${s.output()}` : undefined) });
}

/** `n` distinct free ports on 127.0.0.1. */
export async function ports(n: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < n) {
    const p = await freePort();
    if (!out.includes(p)) out.push(p);
  }
  return out;
}
