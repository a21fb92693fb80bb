/**
 * Raw HTTP/1.1 over node:net / node:tls, for requests no client library would send as written
 * (duplicate or oversized headers, unknown methods, pipelined smuggling attempts). Responses are
 * parsed from the bytes received: status line, header fields, Content-Length body.
 */
import net from 'node:net';
import tls from 'node:tls';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawResult {
  /** Complete responses, in order. */
  responses: RawResponse[];
  /** True when the server closed (or reset) the connection. */
  closed: boolean;
  /** Everything received, latin1. */
  text: string;
}

/**
 * Parses the complete responses at the start of `text`; `headRequests` lists, per response, whether
 * it answers a HEAD request (no body whatever its Content-Length).
 */
export function parseResponses(text: string, headRequests: boolean[] = []): RawResponse[] {
  const out: RawResponse[] = [];
  let pos = 0;
  while (pos < text.length) {
    const end = text.indexOf('\r\n\r\n', pos);
    if (end < 0) break;
    const lines = text.slice(pos, end).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    const status = Number(m[1]);
    if (status >= 100 && status < 200) { // interim (100 Continue): not the response
      pos = end + 4;
      continue;
    }
    const noBody = headRequests[out.length] === true || status === 204 || status === 304;
    const length = noBody ? 0 : Number(headers['content-length'] ?? '0');
    if (text.length < end + 4 + length) break;
    out.push({ status, headers, body: text.slice(end + 4, end + 4 + length) });
    pos = end + 4 + length;
  }
  return out;
}

/**
 * Sends `request` on a new connection to `url`'s host and collects what comes back until the
 * server closes the connection, `expect` complete responses arrived (then this side closes), or
 * `timeoutMs` passed.
 */
export function rawExchange(url: string, request: Buffer | string, opts: { expect?: number; timeoutMs?: number; head?: boolean[] } = {}): Promise<RawResult> {
  const u = new URL(url);
  const port = Number(u.port);
  const expect = opts.expect ?? Infinity;
  return new Promise((resolve) => {
    const socket: net.Socket = u.protocol === 'https:'
      ? tls.connect({ host: u.hostname, port, rejectUnauthorized: false })
      : net.connect(port, u.hostname);
    const chunks: Buffer[] = [];
    let closed = false;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      resolve({ responses: parseResponses(text, opts.head), closed, text });
    };
    const timer = setTimeout(finish, opts.timeoutMs ?? 10_000);
    socket.on(u.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      socket.write(request, () => {});
    });
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (parseResponses(Buffer.concat(chunks).toString('latin1'), opts.head).length >= expect) finish();
    });
    socket.on('error', () => {});
    socket.on('close', () => { closed = true; finish(); });
  });
}
