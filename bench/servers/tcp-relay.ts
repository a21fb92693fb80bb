/**
 * A bare TCP relay (not a unit test, not part of Slipway): the machine's limit for any process
 * that moves a download from the store to a client. Each accepted connection on 127.0.0.1 is
 * piped byte for byte to `host:port` and back (node:net sockets, `pipe` with its backpressure,
 * no HTTP parsing), in its own process so that its CPU is measured apart from the client's.
 *
 *   node dist/bench/servers/tcp-relay.js <host> <port>   # prints "relay listening <port>"
 *
 * The bench starts it with `startTcpRelay`; a client signing S3 requests for the relay's address
 * (SigV4 covers the Host header the client sends, which the relay does not change) talks to the
 * store through it unchanged.
 */
import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { collectLines, exitError } from './target.js';
import { stopChild, trackChild } from '../cleanup.js';

const SELF = fileURLToPath(import.meta.url);

/** A running relay: its URL (http://127.0.0.1:port), its pid, and stop. */
export interface TcpRelay {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts the relay in a child process towards `target` (an http:// URL's host and port).
 * @throws Error when the child exits or prints no listening line within 10 s.
 */
export async function startTcpRelay(target: string): Promise<TcpRelay> {
  const t = new URL(target);
  const proc = spawn(process.execPath, [SELF, t.hostname, t.port || '80'], { stdio: ['ignore', 'pipe', 'pipe'] });
  trackChild(proc);
  let onPort: (p: number) => void = () => {};
  const port = new Promise<number>((resolve) => { onPort = resolve; });
  const tail = collectLines(proc, (line) => {
    const m = /^relay listening (\d+)$/.exec(line);
    if (m) onPort(Number(m[1]));
  });
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`tcp relay did not start within 10 s:\n${tail.join('\n')}`)), 10_000).unref());
  const p = await Promise.race([port, exitError(proc, 'tcp relay', () => tail.join('\n')), timeout]);
  return { url: `http://127.0.0.1:${p}`, pid: proc.pid!, stop: () => stopChild(proc) };
}

function serve(host: string, port: number): void {
  const server = createServer((down) => {
    const up = connect(port, host);
    down.pipe(up);
    up.pipe(down);
    down.on('error', () => up.destroy());
    up.on('error', () => down.destroy());
    down.on('close', () => up.destroy());
    up.on('close', () => down.destroy());
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`relay listening ${(server.address() as { port: number }).port}\n`);
  });
}

if (process.argv[1] === SELF) serve(process.argv[2]!, Number(process.argv[3]));
