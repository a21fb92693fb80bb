/**
 * Starts one of the trivial servers (trivial-http.ts, trivial-blob.ts, trivial-sink.ts) as its own
 * Node process and reads the port it prints. The child is tracked for cleanup (cleanup.ts); the
 * caller stops it with `stopChild`.
 * @throws Error when the process exits before printing its port
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { trackChild } from '../cleanup.js';

/** The started process and its port on 127.0.0.1. */
export interface TrivialServer {
  child: ChildProcess;
  port: number;
}

/** Spawns `script` (a built .js path) with `args` and waits for its port; `what` names it in the error. */
export async function spawnTrivial(script: string, what: string, args: string[] = []): Promise<TrivialServer> {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  trackChild(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${what} exited (${code})`)));
    child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
  });
  return { child, port };
}
