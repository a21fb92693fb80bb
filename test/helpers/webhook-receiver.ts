/**
 * A real webhook receiver for tests: a node:http server on loopback that records every request
 * (headers, raw body, parsed JSON) and checks the platform's signature with node:crypto
 * (`Heroku-Webhook-Hmac-SHA256`: base64 HMAC-SHA256 of the raw body under the webhook's secret).
 * Its answer is chosen per request by `respond` (a status code, a status with headers such as a
 * redirect's Location, or `hang`: never answer). It can
 * be stopped (connections refused) and started again on the same port.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got. */
export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  json: any;
  /** When it arrived (Date.now()). */
  at: number;
  /** The sender's TCP port (which process sent it: `ss -tnp`). */
  remotePort: number | undefined;
}

export interface Receiver {
  /** `http://127.0.0.1:<port>/hook`. */
  url: string;
  port: number;
  received: Received[];
  /** Chooses the answer to each request (default 200). */
  respond: (r: Received) => Answer;
  /** Stops listening and drops open connections (later deliveries are refused). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** True when `signature` is the base64 HMAC-SHA256 of `body` under `secret` (constant-time compare). */
export function signatureValid(secret: string, body: string, signature: string | string[] | undefined): boolean {
  if (typeof signature !== 'string') return false;
  const want = createHmac('sha256', secret).update(body).digest();
  const got = Buffer.from(signature, 'base64');
  return got.length === want.length && timingSafeEqual(got, want);
}

/** A receiver's answer: a status, a status with headers, or `hang` (never answer). */
export type Answer = number | { status: number; headers: Record<string, string> } | 'hang';

/** Starts a receiver on 127.0.0.1 (port 0 = any). */
export async function startReceiver(port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  let server: Server;
  const listen = (p: number) => new Promise<number>((resolve, reject) => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      // A sender that gives up (its timeout) resets the connection: not an error of the receiver.
      req.on('error', () => undefined);
      res.on('error', () => undefined);
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try { json = JSON.parse(body); } catch { json = undefined; }
        const r: Received = { headers: req.headers, body, json, at: Date.now(), remotePort: req.socket.remotePort };
        received.push(r);
        const answer = rec.respond(r);
        if (answer === 'hang') {
          hanging.add(res);
          return;
        }
        const { status, headers } = typeof answer === 'number' ? { status: answer, headers: {} } : answer;
        res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end('ok');
      });
    });
    server.once('error', reject);
    server.listen(p, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
  const stop = () => new Promise<void>((resolve) => {
    for (const res of hanging) res.destroy();
    hanging.clear();
    server.close(() => resolve());
    server.closeAllConnections();
  });
  const bound = await listen(port);
  const rec: Receiver = {
    url: `http://127.0.0.1:${bound}/hook`, port: bound, received, respond: () => 200,
    stop, start: async () => { await listen(bound); }, close: () => (server.listening ? stop() : Promise.resolve()),
  };
  return rec;
}
