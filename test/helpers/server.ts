/**
 * Starts `slipway serve` as a child process on free ports with its own data directory, the way
 * a user runs it, and reads its URLs and the operator's one-time API key from its output.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../server/cli.js', import.meta.url));

export interface ChildServer {
  dataDir: string;
  urls: { registry: string; api: string; auth: string; upload: string; admin: string };
  /** The operator's API key, when this start created the operator. */
  apiKey?: string;
  email?: string;
  totpSecret?: string;
  password?: string;
  proc: ChildProcess;
  /** Sends SIGTERM and waits for exit. */
  stop(): Promise<void>;
  /** Resolves with the exit code (null when killed by a signal) once the process ended. */
  exited: Promise<number | null>;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  /** SIGKILL (crash) and wait. */
  kill(): Promise<void>;
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

/** A new temporary data directory, removed by `cleanup`. */
export function tempDir(prefix = 'slipway-test-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function startServer(dataDir: string, env: Record<string, string> = {}): Promise<ChildServer> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--data', dataDir, '--registry-port', '0', '--api-port', '0', '--auth-port', '0', '--upload-port', '0', '--admin-port', '0'], {
    env: { ...process.env, SLIPWAY_LOG_LEVEL: process.env.SLIPWAY_TEST_LOG_LEVEL ?? 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  trackChild(proc);
  return new Promise((resolve, reject) => {
    let out = '';
    const fields: Record<string, string> = {};
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 20_000);
    proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n')) {
        const kv = /^\s+(api_key|email|totp_secret|password)\s+(\S+)$/.exec(line);
        if (kv) fields[kv[1]!] = kv[2]!;
        const m = /^slipway listening registry=(\S+) api=(\S+) auth=(\S+) upload=(\S+) admin=(\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve({
            dataDir, urls: { registry: m[1]!, api: m[2]!, auth: m[3]!, upload: m[4]!, admin: m[5]! },
            apiKey: fields.api_key, email: fields.email, totpSecret: fields.totp_secret, password: fields.password, proc, exited, output: () => out,
            stop: async () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM'); await exited; },
            kill: async () => { proc.kill('SIGKILL'); await exited; },
          });
        }
      }
    });
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}:\n${out}`)); });
  });
}

/** Runs one `slipway` command (not `serve`) to its end; resolves with its exit code and output. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, SLIPWAY_LOG_LEVEL: 'warn', ...env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
