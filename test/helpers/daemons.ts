/**
 * Shared plumbing for test harnesses that run real daemons (Ceph, PostgreSQL): free loopback
 * ports, waiting on a condition (never a fixed sleep), spawning a daemon whose output goes to a
 * log file (never the caller's stdout: tap would wait for the pipe to close), and sweeping what a
 * killed test process left behind.
 *
 * Every harness works in its own temp directory `<tmp>/<prefix>XXXXXX` holding an `owner.pid`
 * file with the test process's pid. A later harness start sweeps directories with its prefix whose
 * owner is dead: it SIGKILLs the daemons recorded there and removes the directory.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { promises as fsp, openSync, closeSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A free TCP port on 127.0.0.1 for a daemon that binds it later (seconds later, for radosgw or
 * PostgreSQL): a random port below the kernel's ephemeral range (`ip_local_port_range`) that a
 * test listen just now succeeded on. A port the kernel hands out for a listen on port 0 is an
 * ephemeral one, and any outgoing connection of a parallel test file may take it as its local port
 * before the daemon binds it (CI saw radosgw fail with "Address already in use"); ports below the
 * range are never given to outgoing connections. Falls back to a kernel-assigned port after 64
 * taken ones.
 */
export async function freePort(): Promise<number> {
  let low = 32768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch { /* not Linux: the usual default */ }
  const from = 10_000;
  const span = Math.max(0, low - from);
  for (let i = 0; span > 0 && i < 64; i++) {
    const port = from + Math.floor(Math.random() * span);
    if (await listenable(port)) return port;
  }
  return kernelPort();
}

function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Polls `check` every `intervalMs` until it returns true (or a truthy value, which is returned).
 * @throws Error naming `what` after `timeoutMs`, or at once when `abort()` gives a reason.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | false | undefined | null> | T | false | undefined | null,
  opts: { timeoutMs?: number; intervalMs?: number; abort?: () => string | undefined } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let last: unknown;
  for (;;) {
    const why = opts.abort?.();
    if (why) throw new Error(`${what}: ${why}`);
    try {
      const v = await check();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${opts.timeoutMs ?? 60_000} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}

/** Runs a command to completion; resolves with stdout, rejects with stderr in the message. */
export function run(cmd: string, args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 << 20, env: opts.env ?? process.env }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** A daemon started in the foreground mode of its program, output to a log file. */
export interface Daemon {
  readonly name: string;
  readonly child: ChildProcess;
  readonly log: string;
  /** Set once the process exited (code or signal). */
  exited: string | undefined;
}

/** Starts `cmd args` with stdin ignored and stdout/stderr appended to `log`. */
export function startDaemon(name: string, cmd: string, args: string[], log: string): Daemon {
  const fd = openSync(log, 'a');
  try {
    const child = spawn(cmd, args, { stdio: ['ignore', fd, fd] });
    const d: Daemon = { name, child, log, exited: undefined };
    child.on('exit', (code, sig) => { d.exited = sig ? `signal ${sig}` : `exit code ${code}`; });
    child.on('error', (e) => { d.exited = e.message; });
    return d;
  } finally {
    closeSync(fd);
  }
}

/** Sends SIGTERM and waits up to `graceMs` for the exit, then SIGKILLs. */
export async function stopDaemon(d: Daemon, graceMs = 5_000): Promise<void> {
  if (d.exited !== undefined || d.child.exitCode !== null) return;
  const gone = new Promise<void>((r) => d.child.once('exit', () => r()));
  d.child.kill('SIGTERM');
  const timer = setTimeout(() => d.child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

/** The last `n` lines of a log file (for error messages). */
export function tail(path: string, n = 20): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-n).join('\n');
  } catch {
    return '';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Creates `<tmp>/<prefix>XXXXXX` with an owner.pid file, after sweeping directories of the same
 * prefix whose owner is dead (test files run side by side, so the file appears atomically):
 * `pidsOf(dir)` lists the daemon pids to SIGKILL there (only pids whose command line mentions
 * the directory are killed, so a recycled pid is left alone);
 * `beforeRemove(dir)` then undoes what the daemons left outside the directory tree (mounts).
 */
export async function makeRunDir(
  prefix: string, pidsOf: (dir: string) => number[], beforeRemove?: (dir: string) => void,
): Promise<string> {
  const base = tmpdir();
  for (const name of await fsp.readdir(base)) {
    if (!name.startsWith(prefix)) continue;
    const dir = join(base, name);
    let owner = 0;
    try {
      owner = Number(readFileSync(join(dir, 'owner.pid'), 'utf8'));
    } catch {
      continue; // being created right now, or not ours
    }
    // owner.pid appears by rename, so it is never seen half written; anything but a pid is
    // left alone rather than swept from under whoever wrote it.
    if (!Number.isInteger(owner) || owner <= 0 || alive(owner)) continue;
    for (const pid of pidsOf(dir)) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) process.kill(pid, 'SIGKILL');
      } catch { /* already gone */ }
    }
    beforeRemove?.(dir);
    await fsp.rm(dir, { recursive: true, force: true });
  }
  const dir = await fsp.mkdtemp(join(base, prefix));
  // Written aside and renamed: another test process sweeping this prefix reads either no file
  // (skips the directory) or the whole pid, never an empty file it would take for a dead owner.
  await fsp.writeFile(join(dir, 'owner.pid.new'), String(process.pid));
  await fsp.rename(join(dir, 'owner.pid.new'), join(dir, 'owner.pid'));
  return dir;
}

/** Reads a pid file (first line); undefined when absent or unreadable. */
export function readPidFile(path: string): number | undefined {
  if (!existsSync(path)) return undefined;
  const n = Number(readFileSync(path, 'utf8').split('\n')[0]);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * Registers a synchronous last-resort SIGKILL of `pids()` when the test process exits without
 * calling stop() (a failed assertion, an uncaught error). Returns the unregister function.
 */
export function killOnExit(pids: () => number[]): () => void {
  const fn = () => {
    for (const pid of pids()) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  };
  process.on('exit', fn);
  return () => process.off('exit', fn);
}
