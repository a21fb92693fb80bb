/**
 * A minimal HTTP/1.1 keep-alive client over node:net for bodiless GET/HEAD hot loops.
 *
 * Why: undici closes the connection after every HEAD request (lib/dispatcher/client-h1.js sets
 * socket[kReset] for HEAD, undici issue #258), so an undici blob-HEAD benchmark measures TCP
 * connects, not a registry; and undici's per-request cost makes the load generator, which
 * shares the CPUs with the server, the bottleneck at a few thousand req/s. This client writes
 * one pre-built request and parses only the status line and Content-Length.
 *
 * Like Go's net/http and undici, a request that got no response byte before the server closed
 * the keep-alive connection is sent once more on a new connection; `connects` counts every
 * connection opened, so a server that closes after each response shows up in the figures.
 */
import { connect, type Socket } from 'node:net';

/** Status and body length of one response. */
export interface RawReply {
  status: number;
  bytes: number;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** One keep-alive connection; one request at a time. */
export class RawConnection {
  #socket: Socket | null = null;
  #buf: Buffer = Buffer.alloc(0);
  #pending: { request: Buffer; head: boolean; retried: boolean; resolve: (r: RawReply) => void; reject: (e: Error) => void } | null = null;
  #closeAfter = false;
  /** Connections opened so far (1 for a connection the server kept alive throughout). */
  connects = 0;

  /** @param url origin to connect to (http only) */
  constructor(readonly url: URL) {}

  #connect(): Socket {
    const s = connect({ host: this.url.hostname, port: Number(this.url.port || 80), noDelay: true });
    s.on('data', (d: Buffer) => this.#onData(d));
    const fail = (e: Error) => {
      if (this.#socket !== s) return;
      this.#socket = null;
      const p = this.#pending;
      if (!p) return;
      if (!p.retried && this.#buf.length === 0) {
        p.retried = true;
        this.#connect().write(p.request);
        return;
      }
      this.#pending = null;
      p.reject(e);
    };
    s.on('error', fail);
    s.on('close', () => fail(new Error('connection closed by server')));
    this.#buf = Buffer.alloc(0);
    this.#socket = s;
    this.connects++;
    return s;
  }

  /** Sends `request` (complete request bytes) and resolves with the parsed response. */
  send(request: Buffer, head: boolean): Promise<RawReply> {
    if (this.#pending) return Promise.reject(new Error('RawConnection: one request at a time'));
    const s = this.#socket && !this.#socket.destroyed && this.#socket.writable ? this.#socket : this.#connect();
    return new Promise((resolve, reject) => {
      this.#pending = { request, head, retried: false, resolve, reject };
      s.write(request);
    });
  }

  #onData(d: Buffer): void {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, d]) : d;
    const p = this.#pending;
    if (!p) return;
    const end = this.#buf.indexOf(HEADER_END);
    if (end < 0) return;
    const head = this.#buf.toString('latin1', 0, end);
    const status = Number(head.slice(9, 12));
    const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!cl && !p.head && status !== 204 && status !== 304) {
      this.#pending = null;
      this.close();
      p.reject(new Error(`response without Content-Length (status ${status}); this client reads only Content-Length bodies`));
      return;
    }
    const length = p.head || status === 204 || status === 304 ? 0 : Number(cl![1]);
    const total = end + 4 + length;
    if (this.#buf.length < total) return;
    this.#buf = this.#buf.subarray(total);
    this.#closeAfter = /\r\nconnection:\s*close/i.test(head);
    this.#pending = null;
    if (this.#closeAfter) this.close();
    p.resolve({ status, bytes: length });
  }

  /** Closes the socket (the next request reconnects). */
  close(): void {
    const s = this.#socket;
    this.#socket = null;
    s?.destroy();
  }
}

/** Pre-built request bytes for a bodiless request to `url` with optional extra headers. */
export function buildRequest(method: 'GET' | 'HEAD', url: URL, headers: Record<string, string> = {}): Buffer {
  let r = `${method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  for (const [k, v] of Object.entries(headers)) r += `${k}: ${v}\r\n`;
  return Buffer.from(r + '\r\n', 'latin1');
}
