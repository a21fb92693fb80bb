/**
 * uWebSockets.js adapter. uWS rules followed here (its docs, docs/architecture.md (Layers: transport)): the
 * HttpRequest is read synchronously; onAborted and onData are attached before any await; chunks
 * are copied (uWS neuters them on return); every write from async code is corked; files stream
 * with tryEnd/onWritable so a slow reader pauses the disk reads.
 */
import { createRequire } from 'node:module';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { collectBody, runHandler, type BodySink, type ByteSource, type Exchange, type Handler, type ResponseHeaders } from './exchange.js';
import { fail } from '../../engine/errors.js';

const require = createRequire(import.meta.url);

/** Node's major version for each module ABI (`process.versions.modules`) a uWebSockets.js binary names. */
const NODE_OF_ABI: Record<string, string> = { 93: '16', 108: '18', 115: '20', 127: '22', 137: '24' };

/**
 * Why the native uWebSockets.js binary cannot load on this Node, or null when the installed
 * package has one for this platform, CPU and module ABI. The build Slipway installs
 * (@trufflesuite/uws-js-unofficial 20.30.0, the last to run on Debian 12's glibc 2.36) ships
 * binaries up to Node 20 (ABI 115); the uWebSockets.js releases with Node 22/24 binaries (ABI
 * 127/137) are linked against glibc 2.38.
 */
export function uwsUnavailable(): string | null {
  const want = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  let files: string[];
  try {
    files = readdirSync(join(dirname(require.resolve('uWebSockets.js/package.json')), 'binaries'));
  } catch {
    return 'the uWebSockets.js package is not installed';
  }
  if (files.includes(want)) return null;
  const prefix = `uws_${process.platform}_${process.arch}_`;
  const abis = files.filter((f) => f.startsWith(prefix)).map((f) => f.slice(prefix.length, -'.node'.length)).sort((a, b) => Number(a) - Number(b));
  const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
  return `the installed uWebSockets.js build has native binaries for ${process.platform}-${process.arch} Node ABIs ${abis.map((a) => `${a}${NODE_OF_ABI[a] ? ` (Node ${NODE_OF_ABI[a]})` : ''}`).join(', ') || 'none'}, `
    + `not for Node ${process.versions.node} (ABI ${process.versions.modules}); the uWebSockets.js releases built for Node 22 and 24 need glibc 2.38${glibc ? ` (this system has ${glibc})` : ''}. `
    + 'Use the default listener (SLIPWAY_LISTENER=h1), or Node 20 for uws';
}

/**
 * Loads the native uWebSockets.js build. Its package silently falls back to a slow pure-JS
 * implementation when the binary does not load; that is refused here.
 * @throws Error saying why (`uwsUnavailable`) when there is no binary for this Node or only the
 *         fallback loaded.
 */
export function loadUws(): typeof import('uWebSockets.js') {
  if (/^(1|true)$/i.test(process.env.UWS_USE_FALLBACK ?? '')) {
    throw new Error('UWS_USE_FALLBACK is set: Slipway refuses to run on the slow uWebSockets.js fallback');
  }
  const unavailable = uwsUnavailable();
  if (unavailable) throw new Error(`SLIPWAY_LISTENER=uws cannot run here: ${unavailable}`);
  const originalWarn = console.warn;
  const warnings: string[] = [];
  console.warn = (...args: unknown[]) => { warnings.push(args.join(' ')); };
  let uws: typeof import('uWebSockets.js');
  try {
    uws = require('uWebSockets.js');
  } finally {
    console.warn = originalWarn;
  }
  if (typeof (uws as { SSLApp?: unknown }).SSLApp !== 'function') {
    throw new Error(`the native uWebSockets.js binary did not load for Node ${process.versions.node} (ABI ${process.versions.modules}); refusing to run on the pure-JS fallback. ${warnings.join(' ').slice(0, 400)}`);
  }
  return uws;
}

const READ_CHUNK = 1024 * 1024;
const statusLines = new Map<number, string>();
function statusLine(status: number): string {
  let s = statusLines.get(status);
  if (!s) {
    s = `${status} ${STATUS_CODES[status] ?? ''}`;
    statusLines.set(status, s);
  }
  return s;
}

class UwsExchange implements Exchange {
  readonly transport = 'uws' as const;
  readonly method: string;
  readonly path: string;
  readonly id: string;
  aborted = false;
  responded = false;
  status = 0;
  readonly #res: HttpResponse;
  readonly #headers = new Map<string, string>();
  readonly #queryString: string;
  #query: URLSearchParams | undefined;
  #chunks: Buffer[] = [];
  #ended = false;
  #consumer: ((chunk: Buffer, last: boolean) => void) | null = null;
  #paused = false;
  #abortWaiters: Array<() => void> = [];
  /** Why the request's body framing is ambiguous (see `framingProblem`); null when it is not. */
  readonly framingError: string | null;
  #remoteAddress: string | undefined;

  constructor(res: HttpResponse, req: HttpRequest) {
    this.#res = res;
    this.method = req.getCaseSensitiveMethod().toUpperCase();
    this.path = req.getUrl();
    this.#queryString = req.getQuery() ?? '';
    const lengths: string[] = [];
    req.forEach((k, v) => {
      if (k === 'content-length') lengths.push(v);
      this.#headers.set(k, v);
    });
    this.framingError = framingProblem(lengths, this.#headers.has('transfer-encoding'));
    this.id = this.#headers.get('request-id')?.slice(0, 200) || randomUUID();
    res.onAborted(() => {
      this.aborted = true;
      for (const w of this.#abortWaiters) w();
      this.#abortWaiters = [];
    });
    if (this.framingError !== null) {
      this.#ended = true;
      return;
    }
    const hasBody = this.#headers.has('transfer-encoding') || Number(this.#headers.get('content-length') ?? '0') > 0;
    if (hasBody) {
      res.onData((ab, last) => {
        if (last) this.#ended = true;
        if (this.responded) return; // answered early: the rest of the body is discarded
        // A consumer copies what it keeps (BodySink contract); only queued chunks are copied here.
        if (this.#consumer) this.#consumer(Buffer.from(ab), last);
        else if (ab.byteLength > 0) this.#chunks.push(Buffer.copyBytesFrom(new Uint8Array(ab)));
      });
      this.#pause();
    } else {
      this.#ended = true;
    }
  }

  /**
   * Read on first use, and only while the response is open: this uWS call costs about 5 µs,
   * so it is left to the access log, which reads it just before responding.
   */
  get remoteAddress(): string {
    if (this.#remoteAddress === undefined) this.#remoteAddress = this.aborted || this.responded ? '' : Buffer.from(this.#res.getRemoteAddressAsText()).toString();
    return this.#remoteAddress;
  }

  /** Parsed on first use (most requests have no query). */
  get query(): URLSearchParams {
    return (this.#query ??= new URLSearchParams(this.#queryString));
  }

  header(name: string): string {
    return this.#headers.get(name) ?? '';
  }

  #pause(): void {
    if (!this.#paused && !this.aborted) {
      this.#paused = true;
      this.#res.pause();
    }
  }

  #resume(): void {
    if (this.#paused && !this.aborted) {
      this.#paused = false;
      this.#res.resume();
    }
  }

  #consume(onChunk: (chunk: Buffer) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.aborted) return reject(fail('BAD_REQUEST', 'client aborted the request'));
      this.#abortWaiters.push(() => reject(fail('BAD_REQUEST', 'client aborted the request')));
      const queued = this.#chunks;
      this.#chunks = [];
      try {
        for (const c of queued) onChunk(c);
      } catch (e) {
        return reject(e);
      }
      if (this.#ended) return resolve();
      this.#consumer = (chunk, last) => {
        try {
          if (chunk.length > 0) onChunk(chunk);
        } catch (e) {
          this.#consumer = () => {};
          return reject(e);
        }
        if (last) resolve();
      };
      this.#resume();
    });
  }

  body(limit: number): Promise<Buffer> {
    return collectBody(this.header('content-length'), (sink) => this.pipeBody(sink), limit);
  }

  async pipeBody(sink: BodySink): Promise<number> {
    let size = 0;
    await this.#consume((c) => {
      size += c.length;
      if (!sink.write(c) && !this.#paused) {
        this.#pause();
        sink.onDrain(() => this.#resume());
      }
    });
    return size;
  }

  send(status: number, headers: ResponseHeaders, body?: string | Buffer, headLength?: number): void {
    if (this.aborted || this.responded) return;
    this.responded = true;
    this.status = status;
    // Answering before the body was read: let uWS read (and us discard) the rest, so the
    // connection stays usable and the client sees the response rather than a reset.
    this.#chunks = [];
    this.#resume();
    this.#res.cork(() => {
      this.#res.writeStatus(statusLine(status));
      for (const k in headers) if (k !== 'connection') this.#res.writeHeader(k, headers[k]!); // uWS manages its connections
      if (headers['request-id'] === undefined) this.#res.writeHeader('request-id', this.id);
      if (status === 204 || status === 304) this.#res.endWithoutBody();
      else if (this.method === 'HEAD') {
        // endWithoutBody(length) leaves this build's connection unusable (every HEAD closed
        // the keep-alive connection): write the header ourselves and end without a body.
        this.#res.writeHeader('content-length', String(headLength ?? 0));
        this.#res.endWithoutBody();
      }
      else this.#res.end(body ?? '');
    });
  }

  async sendBytes(status: number, headers: ResponseHeaders, source: ByteSource, start: number, length: number): Promise<void> {
    if (this.aborted || this.responded) return;
    this.responded = true;
    this.status = status;
    const res = this.#res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      for (const k in headers) res.writeHeader(k, headers[k]!);
      if (headers['request-id'] === undefined) res.writeHeader('request-id', this.id);
    });
    if (length === 0) {
      res.cork(() => res.end());
      return;
    }
    if (source.stream) return this.#pipe(await source.stream(start, length), length, source.recycle?.bind(source));
    let pos = 0;
    // One buffer per response, reused: each chunk is fully handed to uWS before the next read
    // (a fresh 1 MiB buffer per read cost page faults and GC on every MiB pulled). `source.lend`
    // is not used here: its reads ahead complete while uWS waits for onWritable, which this
    // build then stops calling (below; measured again 2026-11-24 with fs-reader.ts's direct reads:
    // the pulls of test/blobs/fs-reader.test.ts stalled), so uWS pulls read through the page cache.
    const buf = Buffer.allocUnsafeSlow(Math.min(READ_CHUNK, length));
    const read = async (): Promise<Buffer> => {
      const n = Math.min(READ_CHUNK, length - pos);
      const chunk = n === buf.length ? buf : buf.subarray(0, n);
      if (await source.read(chunk, start + pos) !== n) throw new Error(`short read at byte ${start + pos}`);
      pos += n;
      return chunk;
    };
    // One read at a time, then the write: a read-ahead overlapping the wait for onWritable made
    // this build stop calling onWritable (measured: a 100 MB/s reader stalled after ~40 MB).
    while (pos < length && !this.aborted) {
      const chunk = await read();
      if (this.aborted) break;
      let lastOffset = 0;
      let ok = false;
      let done = false;
      res.cork(() => {
        lastOffset = res.getWriteOffset();
        [ok, done] = res.tryEnd(chunk, length);
      });
      if (done) break;
      if (!ok) {
        await new Promise<void>((resolve) => {
          this.#abortWaiters.push(resolve);
          res.onWritable((offset) => {
            if (this.aborted) { resolve(); return true; }
            const [ok2, done2] = res.tryEnd(chunk.subarray(offset - lastOffset), length);
            if (ok2 || done2) resolve();
            return ok2;
          });
        });
      }
    }
  }
  /**
   * Sends the `length` bytes of `body` (a stream whose chunks are ours to keep: each is handed to
   * uWS as it comes, no copy) with uWS's backpressure: a chunk the socket does not take whole
   * pauses the stream until `onWritable` has sent its rest. The stream's own buffer keeps reading
   * meanwhile (up to its high-water mark), so the next chunk is ready when the socket is. A
   * stream that fails or ends short closes the connection (the client sees a short body, never
   * a wrong one) and rejects; a client that goes away destroys the stream. Each chunk uWS took
   * whole goes to `recycle` (the source may reuse its memory).
   */
  #pipe(body: Readable, length: number, recycle?: (chunk: Buffer) => void): Promise<void> {
    const res = this.#res;
    return new Promise<void>((resolve, reject) => {
      let sent = 0;
      let finished = false;
      const finish = (e?: unknown) => {
        if (finished) return;
        finished = true;
        body.destroy();
        if (e !== undefined) {
          if (!this.aborted) res.close();
          reject(e);
        } else resolve();
      };
      this.#abortWaiters.push(() => finish());
      const send = (chunk: Buffer): boolean => {
        const lastOffset = res.getWriteOffset();
        let ok = false;
        let done = false;
        res.cork(() => { [ok, done] = res.tryEnd(chunk, length); });
        if (ok || done) recycle?.(chunk);
        if (done) { finish(); return true; }
        if (ok) return true;
        body.pause();
        res.onWritable((offset) => {
          if (this.aborted || finished) return true;
          const [ok2, done2] = res.tryEnd(chunk.subarray(offset - lastOffset), length);
          if (ok2 || done2) recycle?.(chunk);
          if (done2) finish();
          else if (ok2) body.resume();
          return ok2;
        });
        return false;
      };
      body.on('data', (chunk: Buffer) => {
        if (finished || this.aborted) return;
        if (sent + chunk.length > length) chunk = chunk.subarray(0, length - sent);
        sent += chunk.length;
        send(chunk);
      });
      body.on('end', () => { if (sent < length) finish(new Error(`the blob stream ended after ${sent} of ${length} bytes`)); });
      body.on('error', (e) => finish(e));
      body.on('close', () => { if (!finished && sent < length) finish(new Error(`the blob stream closed after ${sent} of ${length} bytes`)); });
    });
  }
}

/**
 * Body framing that a proxy in front may read differently from uWS (request smuggling, RFC 9112
 * "Message Body Length"): Content-Length sent more than once with differing values (uWS uses the
 * first; `req.forEach` shows every field line), a Content-Length that is not a plain decimal, or
 * both Content-Length and Transfer-Encoding. Identical repeated values are one length (RFC 9110
 * "Content-Length") and pass. (This uWS build closes a request with both Content-Length and
 * Transfer-Encoding natively, before any handler; the check stays for builds that do not.)
 * @returns the reason to refuse, or null.
 */
export function framingProblem(contentLengths: readonly string[], transferEncoding: boolean): string | null {
  if (contentLengths.length === 0) return null;
  if (transferEncoding) return 'both Content-Length and Transfer-Encoding sent';
  if (new Set(contentLengths).size !== 1) return 'conflicting Content-Length values';
  if (!/^\d{1,16}$/.test(contentLengths[0]!)) return 'invalid Content-Length';
  return null;
}

/**
 * Routes every request of `app` to `handler`, after refusing ambiguous framing.
 *
 * A refused request gets 400 and the connection is closed. uWS has already split the bytes it
 * read by the first Content-Length, so whatever followed (a smuggled request, to a proxy that used
 * another length) is parsed and dispatched synchronously right after the refused one, before any
 * timer or other I/O callback. Such requests from the same peer address before the next
 * setImmediate get no response: their connection is closed once the 400 has been flushed (uWS
 * flushes when its handler returns). uWS.js exposes no connection identity, so a request of
 * another connection from the same address dispatched in that same loop turn is closed too.
 */
export function serveUws(app: TemplatedApp, handler: Handler, onError: (ex: Exchange, e: unknown) => void): void {
  let refusedPeer: string | null = null;
  const peer = (res: HttpResponse) => Buffer.from(res.getRemoteAddress()).toString('hex');
  app.any('/*', (res, req) => {
    if (refusedPeer !== null && peer(res) === refusedPeer) {
      let aborted = false;
      res.onAborted(() => { aborted = true; });
      setImmediate(() => { if (!aborted) res.close(); });
      return;
    }
    const ex = new UwsExchange(res, req);
    if (ex.framingError !== null) {
      refusedPeer = peer(res);
      setImmediate(() => { refusedPeer = null; });
      const body = `${ex.framingError}\n`;
      res.cork(() => {
        res.writeStatus(statusLine(400));
        res.writeHeader('content-type', 'text/plain; charset=utf-8');
        res.end(body, true);
      });
      return;
    }
    runHandler(handler, ex, onError);
  });
}

/** Listens on host:port (0 = any free port); resolves with the bound port. */
export function listenUws(uws: typeof import('uWebSockets.js'), app: TemplatedApp, host: string, port: number): Promise<{ port: number; socket: us_listen_socket }> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) return reject(new Error(`cannot listen on ${host}:${port}`));
      resolve({ port: uws.us_socket_local_port(socket), socket });
    });
  });
}
