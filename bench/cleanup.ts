/**
 * Cleanup of child processes and temporary directories on every exit path: normal end,
 * error, SIGINT/SIGTERM. Registered resources are released at most once.
 */
import { rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';

const children = new Set<ChildProcess>();
const dirs = new Set<string>();
let installed = false;

/** Kills a registered child (SIGKILL) if it is still running; synchronous, safe in 'exit'. */
function killNow(c: ChildProcess): void {
  if (c.exitCode === null && c.signalCode === null && c.pid !== undefined) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Releases everything still registered (synchronously). */
export function cleanupNow(): void {
  for (const c of children) killNow(c);
  children.clear();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs.clear();
}

/** Installs exit and signal handlers once. */
export function installCleanup(): void {
  if (installed) return;
  installed = true;
  process.on('exit', cleanupNow);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      process.stderr.write(`bench: ${sig} received, cleaning up\n`);
      cleanupNow();
      process.exit(130);
    });
  }
}

/** Registers a child process to kill on exit. */
export function trackChild(c: ChildProcess): void {
  children.add(c);
  c.once('exit', () => children.delete(c));
}

/** Registers a temporary directory to remove on exit. */
export function trackDir(dir: string): void {
  dirs.add(dir);
}

/** Removes a registered directory now. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

/** Stops a child: SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
export async function stopChild(c: ChildProcess, graceMs = 10_000): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
  c.kill('SIGTERM');
  const timer = setTimeout(() => killNow(c), graceMs);
  await exited;
  clearTimeout(timer);
  children.delete(c);
}
