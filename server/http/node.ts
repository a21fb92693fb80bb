/**
 * node:http adapter. It serves the upload host: llhttp accepts any Content-Length, where the
 * uWebSockets.js build we can install resets requests whose Content-Length has 10 or more
 * digits (README "Large layers").
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import { collectBody, type BodySink, type Exchange, type Handler, type ResponseHeaders } from './exchange.js';
import { fail } from '../../engine/errors.js';

class NodeExchange implements Exchange {
  readonly transport = 'node' as const;
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly id: string;
  responded = false;
  status = 0;
  #aborted = false;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;

  constructor(req: IncomingMessage, res: ServerResponse) {
    this.#req = req;
    this.#res = res;
    this.method = (req.method ?? 'GET').toUpperCase();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    this.query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
    this.id = this.header('request-id').slice(0, 200) || randomUUID();
    res.on('close', () => {
      if (!res.writableFinished) this.#aborted = true;
    });
    req.on('aborted', () => { this.#aborted = true; });
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  header(name: string): string {
    const v = this.#req.headers[name];
    return Array.isArray(v) ? v.join(', ') : (v ?? '');
  }

  body(limit: number): Promise<Buffer> {
    return collectBody(this.header('content-length'), (sink) => this.pipeBody(sink), limit);
  }

  pipeBody(sink: BodySink): Promise<number> {
    const req = this.#req;
    return new Promise((resolve, reject) => {
      let size = 0;
      const onData = (c: Buffer) => {
        size += c.length;
        let more: boolean;
        try {
          more = sink.write(c);
        } catch (e) {
          cleanup();
          req.resume();
          return reject(e);
        }
        if (!more) {
          req.pause();
          sink.onDrain(() => req.resume());
        }
      };
      const onEnd = () => { cleanup(); resolve(size); };
      const onAbort = () => { cleanup(); reject(fail('BAD_REQUEST', 'client aborted the request')); };
      const cleanup = () => {
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('aborted', onAbort);
        req.off('error', onAbort);
      };
      if (req.readableEnded) return resolve(0);
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('aborted', onAbort);
      req.on('error', onAbort);
    });
  }

  /** Starts a response once; false when the client is gone or a response was sent. */
  #begin(status: number, headers: ResponseHeaders): boolean {
    if (this.#aborted || this.responded) return false;
    this.responded = true;
    this.status = status;
    this.#res.statusCode = status;
    for (const k in headers) this.#res.setHeader(k, headers[k]!);
    return true;
  }

  send(status: number, headers: ResponseHeaders, body?: string | Buffer, headLength?: number): void {
    if (!this.#begin(status, headers)) return;
    const res = this.#res;
    // Answering before the body was read: discard the rest so the client sees this response
    // (closing with unread bytes would make the kernel reset the connection).
    if (!this.#req.readableEnded) this.#req.resume();
    if (status === 204 || status === 304) return void res.end();
    const buf = typeof body === 'string' ? Buffer.from(body) : body ?? Buffer.alloc(0);
    res.setHeader('content-length', this.method === 'HEAD' ? (headLength ?? 0) : buf.length);
    res.end(this.method === 'HEAD' ? undefined : buf);
  }

  async sendFile(status: number, headers: ResponseHeaders, path: string, start: number, length: number): Promise<void> {
    if (!this.#begin(status, headers)) return;
    const res = this.#res;
    res.setHeader('content-length', length);
    if (length === 0) return void res.end();
    await pipeline(createReadStream(path, { start, end: start + length - 1, highWaterMark: 1024 * 1024 }), res).catch(() => undefined);
  }
}

/** A node:http server running `handler` for every request. */
export function createNodeServer(handler: Handler, onError: (ex: Exchange, e: unknown) => void, tls?: { cert: Buffer; key: Buffer }): Server {
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const ex = new NodeExchange(req, res);
    handler(ex).catch((e) => onError(ex, e));
  };
  const server: Server = tls ? createTlsServer(tls, listener) : createServer(listener);
  server.keepAliveTimeout = 30_000;
  server.requestTimeout = 0; // uploads of any size may take as long as they take
  return server;
}
