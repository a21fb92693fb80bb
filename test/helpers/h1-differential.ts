/**
 * Differential runner: sends the same raw bytes to Slipway's own HTTP/1.1 listener
 * (server/http/h1-server.ts `createH1Server`) and to a node:http server (llhttp, default strict
 * mode) in this process, over loopback TCP, and compares what each dispatched: the requests'
 * methods, targets, header sets and bodies, in order, and whether it refused the stream.
 *
 * Verdicts (`compare`):
 * - `agree`: the same requests were dispatched with the same heads and bodies;
 * - `stricter:<reason>`: Slipway dispatched a prefix of what node:http dispatched (or refused
 *   a body node:http completed) and answered with one of the refusals in STRICTER, each a
 *   deliberate rule with its reason;
 * - `diverge:<what>`: anything else: Slipway accepted something llhttp refused, split the stream
 *   differently, refused for a reason not listed, or a connection did not end.
 *
 * Each lane is one Slipway server and one node:http server that run one case at a time, so every
 * request a server records belongs to the lane's current case.
 */
import net from 'node:net';
import http from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createH1Server, type H1Server } from '../../server/http/h1-server.js';
import type { RequestHead } from '../../server/http/h1-head.js';
import type { GeneratedCase } from './h1-generator.js';

/** What a server dispatched for one request: its head, and its body or null when it never completed. */
export interface Dispatched {
  method: string;
  target: string;
  /** Lowercase name → values joined with ", ", as a sorted list of `name: value` lines. */
  headers: string[];
  body: string | null;
}

/** One side's view of a case. */
export interface SideResult {
  dispatched: Dispatched[];
  /** Slipway: the refusal's `status message`; node:http: the llhttp error code; null when none. */
  refusal: string | null;
  /** False when the connection did not end within the case timeout. */
  ended: boolean;
}

/**
 * Refusals where Slipway is deliberately stricter than llhttp, by the listener's message, with
 * the rule behind each (docs/architecture.md "Which listener, and why").
 */
export const STRICTER: ReadonlyArray<{ message: RegExp; reason: string }> = [
  { message: /^501 method not implemented/, reason: 'methods outside GET HEAD POST PUT PATCH DELETE OPTIONS TRACE are 501 (RFC 9110 §9.1, §15.6.2); llhttp knows WebDAV, RTSP and other methods' },
  { message: /^400 no Host field/, reason: 'an HTTP/1.1 request without Host is 400 and ends the connection (RFC 9112 §3.2); node:http answers 400 but goes on to dispatch what follows it' },
  { message: /^400 more than one Host field/, reason: 'a repeated Host is 400 (RFC 9112 §3.2 MUST); node:http keeps the first' },
  { message: /^400 invalid Host field/, reason: 'a Host that is not uri-host[:port] is 400 (RFC 9112 §3.2 MUST); node:http does not check it' },
  { message: /^400 malformed request line/, reason: 'one SP between the three parts and HTTP/1.0 or 1.1 only (RFC 9112 §3); llhttp allows several spaces, HTTP/0.9 and 2.0, and URL bytes outside VCHAR' },
  { message: /^400 malformed request target/, reason: 'origin-form or http(s) absolute-form with a host, no userinfo and no fragment only (RFC 9112 §3.2, §3.3; RFC 9110 §4.2.4); llhttp also passes asterisk-form, authority-form, other schemes and a fragment' },
  { message: /^400 (host|connection|keep-alive|upgrade) is not allowed in a trailer/, reason: 'Host, Connection, Keep-Alive and Upgrade trailers are refused like Content-Length and Transfer-Encoding ones (RFC 9110 §6.5.1); llhttp refuses only those two (and acts on a Connection: close trailer)' },
  { message: /^400 malformed chunk extension/, reason: 'a chunk extension needs a token name and a token or quoted-string value after "=" (RFC 9112 §7.1.1); llhttp accepts empty ones' },
  { message: /^501 transfer coding/, reason: 'chunked is the only transfer coding (RFC 9112 §6.1: 501 for others); llhttp frames any list ending in chunked' },
  { message: /^400 invalid Transfer-Encoding/, reason: 'an HTAB inside a Transfer-Encoding value is 400; llhttp allows it between codings (only chunked is served)' },
  { message: /^400 Transfer-Encoding in an HTTP\/1\.0 request/, reason: 'Transfer-Encoding in HTTP/1.0 means faulty framing (RFC 9112 §6.1 MUST); llhttp decodes it' },
  { message: /^400 (invalid Content-Length|chunk size too large)/, reason: 'lengths and chunk sizes above 2^53 - 1 are refused; llhttp counts to 2^64 - 1' },
  { message: /^431 /, reason: 'at most 100 header fields and 16 KiB of head; node:http counts its 16 KiB differently and keeps 2,000 fields' },
];

/** Why Slipway reads nothing after a request whose Connection lists close. */
export const CLOSE_WINS = 'a request whose Connection lists close ends the connection even when keep-alive is listed too (RFC 9112 §9.6); llhttp keeps an HTTP/1.0 connection that lists both';

/** Strips an absolute-form target to its path and query; the authority becomes the host. */
function originForm(url: string): { target: string; authority?: string } {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s.exec(url);
  if (!m) return { target: url };
  return { target: m[3]!.startsWith('/') ? m[3]! : `/${m[3]!}`, authority: m[2]! };
}

function headerLines(entries: Iterable<[string, string]>): string[] {
  return [...entries].map(([k, v]) => `${k}: ${v}`).sort();
}

/** A lane: one Slipway listener and one node:http server, each recording what it dispatched. */
export class Lane {
  slipway: Dispatched[] = [];
  node: Dispatched[] = [];
  nodeError: string | null = null;
  #h1!: H1Server;
  #http!: http.Server;
  slipwayPort = 0;
  nodePort = 0;

  async start(): Promise<void> {
    this.#h1 = createH1Server(async (ex) => {
      const head = (ex as unknown as { head: RequestHead }).head;
      const d: Dispatched = { method: head.method, target: head.target, headers: headerLines(head.headers), body: null };
      this.slipway.push(d);
      try {
        d.body = (await ex.body(1 << 20)).toString('latin1');
      } catch {
        return;
      }
      ex.send(200, {}, 'ok');
    }, () => {});
    const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const fields = new Map<string, string>();
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i]!.toLowerCase();
        const prior = fields.get(name);
        fields.set(name, prior === undefined ? req.rawHeaders[i + 1]! : `${prior}, ${req.rawHeaders[i + 1]!}`);
      }
      const { target, authority } = originForm(req.url ?? '');
      if (authority !== undefined) fields.set('host', authority);
      const d: Dispatched = { method: req.method ?? '', target, headers: headerLines(fields), body: null };
      this.node.push(d);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        d.body = Buffer.concat(chunks).toString('latin1');
        // node:http closes every HTTP/1.0 connection after its response; the own listener keeps
        // one that asked for keep-alive (RFC 9112 §9.3). Not a parsing matter: node:http is made
        // to keep it too, so that both read what a client pipelines after it.
        if (req.httpVersionMinor === 0 && /keep-alive/i.test(req.headers.connection ?? '') && !/close/i.test(req.headers.connection ?? '')) res.shouldKeepAlive = true;
        res.setHeader('content-length', 2);
        res.end('ok');
      });
      req.on('error', () => {});
    };
    this.#http = http.createServer(onRequest);
    // The client half-closes after its last byte and waits for the answers, which the own
    // listener gives; node:http by default drops requests still in progress at the client's FIN.
    (this.#http as unknown as { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    this.#http.on('checkExpectation', onRequest); // an unknown Expect is dispatched like any request
    this.#http.on('clientError', (e: NodeJS.ErrnoException, socket: net.Socket) => {
      this.nodeError ??= e.code ?? 'error';
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      socket.destroy();
    });
    await Promise.all([listen(this.#h1.server), listen(this.#http)]);
    this.slipwayPort = (this.#h1.server.address() as net.AddressInfo).port;
    this.nodePort = (this.#http.address() as net.AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.#h1.closeAllConnections();
    this.#http.closeAllConnections();
    await Promise.all([new Promise((r) => this.#h1.server.close(r)), new Promise((r) => this.#http.close(r))]);
  }

  /** Runs one case on both servers at once. */
  async run(c: GeneratedCase, timeoutMs: number): Promise<{ slipway: SideResult; node: SideResult }> {
    this.slipway = [];
    this.node = [];
    this.nodeError = null;
    const [s, n] = await Promise.all([send(this.slipwayPort, c, timeoutMs), send(this.nodePort, c, timeoutMs)]);
    await nextTurn(); // body 'end' events queued behind the close
    return {
      slipway: { dispatched: this.slipway, refusal: refusalOf(s.text), ended: s.ended },
      node: { dispatched: this.node, refusal: this.nodeError, ended: n.ended },
    };
  }
}

function listen(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
}

/** Writes the case's bytes in its pieces (a turn of the event loop between them), half-closes, reads until the server closes. */
function send(port: number, c: GeneratedCase, timeoutMs: number): Promise<{ text: string; ended: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    const got: Buffer[] = [];
    let done = false;
    const finish = (ended: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(got).toString('latin1'), ended });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (d: Buffer) => got.push(d));
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
    socket.on('connect', async () => {
      let at = 0;
      for (const end of [...c.splits, c.bytes.length]) {
        if (socket.destroyed) return;
        socket.write(c.bytes.subarray(at, end));
        at = end;
        if (end < c.bytes.length) await nextTurn();
      }
      socket.end();
    });
  });
}

/** The listener's refusal in a response stream: the first status other than 100 and 200, with its body's first line. */
function refusalOf(text: string): string | null {
  const re = /HTTP\/1\.1 (\d{3}) [^\r]*\r\n((?:[^\r]+\r\n)*)\r\n/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const status = m[1]!;
    if (status === '100' || status === '200') continue;
    const length = Number(/content-length: (\d+)/i.exec(m[2]!)?.[1] ?? 0);
    const body = text.slice(re.lastIndex, re.lastIndex + length);
    return `${status} ${body.split('\n')[0]}`;
  }
  return null;
}

function same(a: Dispatched, b: Dispatched): boolean {
  return a.method === b.method && a.target === b.target && a.headers.join('\n') === b.headers.join('\n');
}

/**
 * The verdict on one case (see the module comment).
 * @returns `agree`, `stricter:<reason>` or `diverge:<what>`
 */
export function compare(s: SideResult, n: SideResult): string {
  if (!s.ended) return 'diverge:the Slipway connection did not end';
  if (!n.ended) return 'diverge:the node:http connection did not end';
  const listed = s.refusal === null ? undefined : STRICTER.find((x) => x.message.test(s.refusal!));
  const stricter = (what: string) => (listed ? `stricter:${listed.reason}` : `diverge:${what} (Slipway: ${s.refusal ?? 'no refusal'}; node: ${n.refusal ?? 'no error'})`);
  for (let i = 0; i < s.dispatched.length; i++) {
    const a = s.dispatched[i]!;
    const b = n.dispatched[i];
    if (!b) return `diverge:Slipway dispatched request ${i + 1}, node:http did not (node: ${n.refusal ?? 'no error'})`;
    if (!same(a, b)) return `diverge:request ${i + 1} differs: Slipway ${JSON.stringify(a)} node ${JSON.stringify(b)}`;
    if (a.body === b.body) continue;
    if (a.body !== null && b.body !== null) return `diverge:request ${i + 1} bodies differ: ${JSON.stringify(a.body)} vs ${JSON.stringify(b.body)}`;
    if (a.body !== null) return `diverge:Slipway completed the body of request ${i + 1}, node:http did not (node: ${n.refusal ?? 'no error'})`;
    return stricter(`Slipway did not complete the body of request ${i + 1}, node:http did`);
  }
  const last = s.dispatched[s.dispatched.length - 1];
  if (n.dispatched.length > s.dispatched.length && s.refusal === null && last?.headers.some((h) => /^connection: .*\bclose\b/i.test(h))) {
    return `stricter:${CLOSE_WINS}`;
  }
  if (n.dispatched.length > s.dispatched.length) return stricter(`node:http dispatched ${n.dispatched.length} requests, Slipway ${s.dispatched.length}`);
  if (s.refusal !== null && n.refusal === null) return stricter('Slipway refused what node:http accepted');
  return 'agree';
}
