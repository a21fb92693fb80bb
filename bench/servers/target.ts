/** A running registry under test, and helpers shared by the server launchers. */
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A started registry the workloads run against. */
export interface Target {
  name: 'slipway' | 'reference';
  /** Registry base URL (plain HTTP, 127.0.0.1). */
  registry: string;
  /** Authorization header value for every registry request, if the server needs one. */
  authorization?: string;
  /** PID of the server process (for /proc readings). */
  pid: number;
  /** Server version or description for the output. */
  version: string;
  /** Last lines the server printed after start (warnings, errors). */
  logTail(): string[];
  /** Stops the server and removes its data. */
  stop(): Promise<void>;
}

/** Keeps the last `max` lines of a child's stdout and stderr, and hands each line to `onLine`. */
export function collectLines(proc: ChildProcess, onLine: (line: string) => void, max = 200): string[] {
  const tail: string[] = [];
  for (const s of [proc.stdout, proc.stderr]) {
    if (!s) continue;
    let partial = '';
    s.on('data', (d: Buffer) => {
      partial += d.toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        tail.push(line);
        if (tail.length > max) tail.shift();
        onLine(line);
      }
    });
  }
  return tail;
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves when `proc` exits, with a message naming `what`; used to race start-up waits. */
export function exitError(proc: ChildProcess, what: string, output: () => string): Promise<never> {
  return new Promise((_, reject) => {
    proc.once('exit', (code, signal) => reject(new Error(`${what} exited during start (code ${code}, signal ${signal}):\n${output()}`)));
  });
}
