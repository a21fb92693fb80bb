/**
 * The upload host's HTTP/1.1 listener (docs/decisions.md "Large layers"): any Content-Length up to 2^53 - 1
 * (the uWebSockets.js build resets 10-digit lengths), chunked bodies, keep-alive, and bulk bodies
 * read by the kernel straight into the upload writer's buffers (h1-connection.ts).
 *
 * Zero-copy reads use node:net's `onread` user buffers. node:net offers them only to sockets it
 * constructs, not to accepted ones, so each accepted socket's handle is moved into a socket built
 * with `onread` (the accepted wrapper is released without closing the handle). That relies on the
 * `_handle` field, stable since Node 0.x but not public: when it is missing the listener falls
 * back to ordinary 'data' events (one copy per chunk), and TLS connections always use them.
 */
import { createServer, Socket, type Server } from 'node:net';
import type { Readable } from 'node:stream';
import { createServer as createTlsServer } from 'node:tls';
import { randomUUID } from 'node:crypto';
import { collectBody, runHandler, type BodySink, type ByteSource, type ConnectionMemo, type Exchange, type Handler, type ResponseHeaders } from './exchange.js';
import { Connection, DEFAULT_TIMEOUTS, type ConnectionTimeouts } from './h1-connection.js';
import type { RequestHead } from './h1-head.js';
import { fail } from '../../engine/errors.js';

/**
 * Size of the buffer for reads that do not go straight into a body sink (bytes). One buffer
 * serves every connection of a server: libuv reads one socket and runs its callback before
 * reading the next, and everything kept from a read is copied (h1-connection.ts `onBytes`), so
 * idle keep-alive connections cost no buffer memory.
 */
const SCRATCH_BYTES = 64 * 1024;
/** Read size when streaming a file to a client (bytes). */
const FILE_CHUNK_BYTES = 1024 * 1024;

class H1Exchange implements Exchange {
  readonly transport = 'h1' as const;
  readonly method: string;
  readonly path: string;
  readonly id: string;
  responded = false;
  status = 0;
  #aborted = false;
  #finished = false;
  readonly #conn: Connection;
  readonly #headers: Map<string, string>;
  readonly #target: string;
  #query: URLSearchParams | undefined;

  constructor(conn: Connection, head: RequestHead, readonly memo: ConnectionMemo) {
    this.#conn = conn;
    this.#headers = head.headers;
    this.#target = head.target;
    this.method = head.method.toUpperCase();
    const q = head.target.indexOf('?');
    this.path = q === -1 ? head.target : head.target.slice(0, q);
    this.id = this.header('request-id').slice(0, 200) || randomUUID();
    conn.onAbort(() => {
      if (!this.#finished) this.#aborted = true;
    });
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Parsed on first use (most requests have no query). */
  get query(): URLSearchParams {
    if (this.#query === undefined) {
      const q = this.#target.indexOf('?');
      this.#query = new URLSearchParams(q === -1 ? '' : this.#target.slice(q + 1));
    }
    return this.#query;
  }

  get remoteAddress(): string {
    return this.#conn.socket.remoteAddress ?? '';
  }

  header(name: string): string {
    return this.#headers.get(name) ?? '';
  }

  body(limit: number): Promise<Buffer> {
    return collectBody(this.header('content-length'), (sink) => this.pipeBody(sink), limit);
  }

  pipeBody(sink: BodySink): Promise<number> {
    const conn = this.#conn;
    return new Promise((resolve, reject) => {
      let size = 0;
      let settled = false;
      const stop = (e: unknown) => {
        if (settled) return;
        settled = true;
        conn.discardBody();
        reject(e);
      };
      const more = (ready: boolean) => {
        if (ready) return;
        conn.setSinkReady(false);
        sink.onDrain(() => conn.setSinkReady(true));
      };
      const commit = sink.commit?.bind(sink);
      const region = sink.region?.bind(sink);
      conn.consumeBody({
        data: (chunk) => {
          if (settled) return;
          size += chunk.length;
          try {
            more(sink.write(chunk));
          } catch (e) {
            stop(e);
          }
        },
        ...(region && commit ? {
          region,
          committed: (n: number) => {
            if (settled) return;
            size += n;
            try {
              more(commit(n));
            } catch (e) {
              stop(e);
            }
          },
        } : {}),
        end: () => {
          if (settled) return;
          settled = true;
          resolve(size);
        },
        abort: () => stop(fail('BAD_REQUEST', 'client aborted the request')),
      });
    });
  }

  /** Starts the response once; false when the client is gone or a response was sent. */
  #begin(status: number): boolean {
    if (this.#aborted || this.responded || this.#conn.closed) return false;
    this.responded = true;
    this.status = status;
    return true;
  }

  send(status: number, headers: ResponseHeaders, body?: string | Buffer, headLength?: number): void {
    if (!this.#begin(status)) return;
    const buf = typeof body === 'string' ? Buffer.from(body) : body;
    const head = this.method === 'HEAD';
    this.#finished = true;
    this.#conn.writeHead(status, headers, head ? (headLength ?? 0) : buf?.length ?? 0, this.id, head ? undefined : buf);
  }

  async sendBytes(status: number, headers: ResponseHeaders, source: ByteSource, start: number, length: number): Promise<void> {
    if (!this.#begin(status)) return;
    const conn = this.#conn;
    conn.writeHead(status, headers, length, this.id, undefined, false);
    if (length > 0 && this.method !== 'HEAD') {
      try {
        if (source.stream) {
          // The stream's chunks are ours to keep: handed to the socket as they come, and back
          // to the source (recycle) once the socket is done with them.
          const body = await source.stream(start, length);
          let sent: number;
          try {
            sent = await this.#pipe(body, source.recycle?.bind(source));
          } finally {
            body.destroy();
          }
          if (sent !== length && !this.#aborted) throw new Error(`the blob stream gave ${sent} of ${length} bytes`);
        } else if (source.lend) {
          // The source's buffers (fs-reader.ts reads ahead into them): each is written whole
          // before the next is asked for, while the source's next reads are under way.
          for (let pos = 0; pos < length && !this.#aborted;) {
            const chunk = await source.lend(start + pos, length - pos);
            if (chunk.byteLength === 0) throw new Error(`short read at byte ${start + pos}`);
            pos += chunk.byteLength;
            if (this.#aborted) break;
            await writeLent(conn, chunk);
          }
        } else {
          for (let pos = 0; pos < length && !this.#aborted;) {
            // A fresh buffer per chunk: the socket holds it until written.
            const chunk = Buffer.allocUnsafe(Math.min(FILE_CHUNK_BYTES, length - pos));
            const n = await source.read(chunk, start + pos);
            if (n !== chunk.length) throw new Error(`short read at byte ${start + pos}`);
            pos += n;
            if (this.#aborted) break;
            if (!conn.socket.write(chunk)) await drained(conn);
          }
        }
      } catch {
        conn.socket.destroy(); // the client sees a short body, never a wrong one
      }
    }
    if (this.#aborted) return;
    this.#finished = true;
    conn.endResponse();
  }

  /**
   * Writes the chunks of `body` to the socket as they come ('data' events: no promise per
   * chunk), pausing the stream while the socket is over its high-water mark; each chunk goes to
   * `recycle` once the socket is done with it. Resolves with the bytes written when the stream
   * ends or closes, or at the first chunk after the client went away; rejects on its error.
   */
  #pipe(body: Readable, recycle: ((chunk: Buffer) => void) | undefined): Promise<number> {
    const conn = this.#conn;
    return new Promise<number>((resolve, reject) => {
      let sent = 0;
      body.on('data', (chunk: Buffer) => {
        if (this.#aborted) return resolve(sent);
        sent += chunk.length;
        if (conn.socket.write(chunk, recycle && (() => recycle(chunk)))) return;
        body.pause();
        void drained(conn).then(() => body.resume());
      });
      body.on('end', () => resolve(sent));
      body.on('close', () => resolve(sent));
      body.on('error', reject);
    });
  }
}

/** Writes body bytes the caller will reuse: resolves once the socket handed all of `chunk` to the kernel, or closed. */
function writeLent(conn: Connection, chunk: Uint8Array): Promise<void> {
  const socket = conn.socket;
  if (conn.closed || socket.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => { socket.off('close', done); resolve(); };
    socket.on('close', done);
    socket.write(chunk, done);
  });
}

/** Resolves when the socket can take more, or when the connection closed. */
function drained(conn: Connection): Promise<void> {
  const socket = conn.socket;
  if (conn.closed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

/** A listener returned by `createH1Server`. */
export interface H1Server {
  readonly server: Server;
  /** Destroys every open connection (the listening socket is closed with `server.close`). */
  closeAllConnections(): void;
}

/** An HTTP/1.1 server running `handler` for every request; TLS when `tls` is given. */
export function createH1Server(handler: Handler, onError: (ex: Exchange, e: unknown) => void, tls?: { cert: Buffer; key: Buffer }, timeouts: ConnectionTimeouts = DEFAULT_TIMEOUTS): H1Server {
  const open = new Set<Socket>();
  const memos = new WeakMap<Connection, ConnectionMemo>();
  const onRequest = (conn: Connection, head: RequestHead) => {
    let memo = memos.get(conn);
    if (!memo) memos.set(conn, (memo = {}));
    const ex = new H1Exchange(conn, head, memo);
    runHandler(handler, ex, onError);
  };
  const track = (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  };
  let server: Server;
  if (tls) {
    server = createTlsServer({ ...tls, allowHalfOpen: true }, (socket) => {
      const conn = new Connection(socket, onRequest, timeouts);
      socket.on('data', (d: Buffer) => conn.onBytes(d, true));
      track(socket);
    });
  } else {
    const scratch = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
    server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (accepted) => {
      let conn: Connection | undefined;
      const socket = withUserBuffers(accepted, () => conn?.nextReadBuffer(scratch) ?? scratch, (n, buf) => conn!.onRead(n, buf));
      conn = new Connection(socket, onRequest, timeouts);
      if (socket === accepted) {
        socket.on('data', (d: Buffer) => conn!.onBytes(d, true));
        socket.resume();
      }
      track(socket);
    });
  }
  return {
    server,
    closeAllConnections: () => {
      for (const s of open) s.destroy();
    },
  };
}

/**
 * Moves an accepted socket's handle into a socket that reads into buffers from `next` and
 * reports each read to `onRead`. Returns `accepted` unchanged when its handle is not reachable.
 */
function withUserBuffers(accepted: Socket, next: () => Buffer, onRead: (n: number, buf: Buffer) => void): Socket {
  const internal = accepted as unknown as { _handle?: object | null };
  const handle = internal._handle;
  if (!handle) return accepted;
  internal._handle = null;
  accepted.destroy(); // releases the server's count of it; the handle stays open
  const options = { handle, allowHalfOpen: true, readable: true, writable: true, onread: { buffer: next, callback: onRead } };
  return new Socket(options as unknown as ConstructorParameters<typeof Socket>[0]);
}
