/**
 * The pull client of the bench (bench/workloads/pulls.ts, bench/pull-limit.ts): one bodiless GET
 * on its own keep-alive-free TCP connection, whose response body is counted and never kept.
 *
 * Why not undici (bench/client.ts `fetchCount`): consuming a body through undici's stream costs
 * the client about a core while it pulls at disk speed (measured 2026-11-24: client_cpu_pct
 * 99–107 during pull_1gib), and the client shares the machine's two CPUs with the server under
 * test, so it hid the servers' differences. This client reads with `net.Socket`'s `onread` into
 * one reusable 1 MiB buffer per connection (no allocation per read, no stream machinery) and only
 * parses the status line, Content-Length and Location. Bodies must carry Content-Length (a
 * registry's blob GET does); anything else is an error, as is a connection closed early.
 */
import { connect } from 'node:net';

/** Status, body bytes counted, and the Location header (redirects). */
export interface PullReply {
  status: number;
  bytes: number;
  location?: string;
}

/** Size of each connection's read buffer (bytes). */
const READ_BUFFER = 1024 * 1024;
const HEADER_END = Buffer.from('\r\n\r\n');
/** Most header bytes accepted before the blank line. */
const MAX_HEAD = 64 * 1024;

/**
 * GETs `url` (http only) with `headers` on a new connection and counts the body.
 * @param stallMs the request fails when no byte arrives for this long (ms)
 * @throws Error on a connection error or early close, a response without Content-Length, a
 *         head over 64 KiB, or a stall
 */
export function pullCount(url: URL, headers: Record<string, string> = {}, stallMs = 15_000): Promise<PullReply> {
  let request = `GET ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\n`;
  for (const [k, v] of Object.entries(headers)) request += `${k}: ${v}\r\n`;
  return new Promise((resolve, reject) => {
    let head: Buffer | null = Buffer.alloc(0);
    let status = 0;
    let location: string | undefined;
    let length = -1;
    let bytes = 0;
    let settled = false;
    const finish = (e: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (e) reject(e);
      else resolve({ status, bytes, ...(location ? { location } : {}) });
    };
    const fail = (why: string) => finish(new Error(`GET ${url} (status ${status || '-'}): ${why} after ${bytes} of ${length < 0 ? '?' : length} body bytes`));
    const timer = setTimeout(() => fail(`no byte for ${stallMs} ms`), stallMs);
    /** Parses the head once complete; returns the body bytes that came with it, or -1 for more. */
    const parseHead = (): number => {
      const end = head!.indexOf(HEADER_END);
      if (end < 0) {
        if (head!.length > MAX_HEAD) fail('response head over 64 KiB');
        return -1;
      }
      const text = head!.toString('latin1', 0, end);
      status = Number(text.slice(9, 12));
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(text);
      const loc = /\r\nlocation:\s*([^\r]+)/i.exec(text);
      location = loc?.[1]?.trim();
      if (!cl) {
        fail('response without Content-Length (this client counts Content-Length bodies only)');
        return -1;
      }
      length = Number(cl[1]);
      const rest = head!.length - end - 4;
      head = null;
      return rest;
    };
    const socket = connect({
      host: url.hostname,
      port: Number(url.port || 80),
      onread: {
        buffer: Buffer.allocUnsafe(READ_BUFFER),
        callback: (n: number, buf: Uint8Array): boolean => {
          timer.refresh();
          if (head !== null) {
            head = Buffer.concat([head, buf.subarray(0, n)]);
            const rest = parseHead();
            if (rest < 0) return true;
            bytes += rest;
          } else {
            bytes += n;
          }
          if (bytes > length) fail('more body bytes than Content-Length');
          else if (bytes === length) finish(null);
          return true;
        },
      },
    });
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(request + '\r\n', 'latin1'));
    socket.on('error', (e) => fail(e.message));
    socket.on('close', () => fail('connection closed'));
  });
}

/**
 * GETs a blob, following one redirect (a registry may send pulls to a storage URL).
 * @throws Error as `pullCount` does, or when the final status is not 200
 */
export async function pullBlob(url: URL, headers: Record<string, string>, stallMs?: number): Promise<PullReply & { url: URL }> {
  let r = await pullCount(url, headers, stallMs);
  let at = url;
  if (r.status >= 300 && r.status < 400 && r.location) {
    at = new URL(r.location, url);
    r = await pullCount(at, at.origin === url.origin ? headers : {}, stallMs);
  }
  if (r.status !== 200) throw new Error(`GET ${at} answered ${r.status}`);
  return { ...r, url: at };
}
