/**
 * The S3 backend's object GETs over plain http: a minimal HTTP/1.1 client on keep-alive
 * node:net sockets whose reads go into pooled buffers (chunk-pool.ts) and whose body bytes are
 * handed on as they were read: no HTTP parser touches the body (the answer is framed by its
 * Content-Length), no copy, no allocation per read. A pull relays every byte of a blob, and this
 * costs the node about a third of the CPU per GiB that undici's `request` did (bench/README.md,
 * "S3 streamed pulls"). https endpoints keep undici (s3-backend.ts `#get`).
 *
 * What is checked: the status line, a 2xx answer's Content-Length (required: without it a short
 * body could not be told from a complete one), the body's length (a connection that closes,
 * resets or goes quiet for `timeoutMs` before the last byte errors the body stream, never ends
 * it; bytes beyond it close the connection). Answers other than 2xx are read for their text
 * (Content-Length or chunked, at most 64 KiB) and their connection is not reused. A request sent
 * on a reused idle connection that the store had closed meanwhile (no byte of answer) is sent
 * once more on a new one (a GET is idempotent).
 */
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { giveBack, lend, readBuffer, CHUNK_BYTES } from './chunk-pool.js';

/** Largest response head or error body read (bytes). */
const MAX_HEAD = 64 * 1024;
/** Idle connections kept per host. */
const KEEP_IDLE = 8;

/** One answer: its status, its header fields (lower-case names; repeats joined by ", "), its body. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  /** Exactly the answer's bytes: ends after the last one, errors on anything short. */
  body: Readable;
}

/** An Error with a network code that storeUnavailable (s3-read.ts) treats as "no answer". */
function netError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** The body of one answer: a Readable whose `_read` resumes the socket paused for backpressure. */
class Body extends Readable {
  constructor(private readonly conn: Conn) {
    super({ highWaterMark: 2 * CHUNK_BYTES });
  }
  override _read(): void {
    this.conn.resume(this);
  }
  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    this.conn.abandon(this);
    cb(err);
  }
}

/** One keep-alive connection and the state of the answer it is reading. */
class Conn {
  readonly socket: Socket;
  phase: 'idle' | 'head' | 'body' | 'text' | 'closed' = 'idle';
  /** Served an answer before (a failure without any byte of answer may be a stale connection). */
  reused = false;
  gotBytes = false;
  #head: Buffer | undefined;
  #remaining = 0;
  #chunked = false;
  #text: Buffer[] = [];
  #textBytes = 0;
  #body: Body | undefined;
  #paused = false;
  #reusable = true;
  #onHead: ((a: RawAnswer) => void) | undefined;
  #onFail: ((e: Error) => void) | undefined;
  #timeoutMs = 0;

  constructor(host: string, port: number, private readonly release: (c: Conn) => void) {
    const opts = { host, port, noDelay: true, onread: { buffer: readBuffer, callback: (n: number, buf: Buffer) => this.#onRead(n, buf) } };
    this.socket = connect(opts as unknown as Parameters<typeof connect>[0]);
    this.socket.on('timeout', () => this.#fail(netError(this.phase === 'idle' ? 'idle' : `the store sent nothing for ${this.#timeoutMs} ms`, 'ETIMEDOUT')));
    this.socket.on('error', (e) => this.#fail(e));
    this.socket.on('end', () => this.#fail(netError('the store closed the connection', 'ECONNRESET')));
    this.socket.on('close', () => this.#fail(netError('the connection to the store closed', 'ECONNRESET')));
  }

  /** Sends GET `path` with `headers`; resolves at the answer's head. */
  request(hostHeader: string, path: string, headers: Record<string, string>, timeoutMs: number): Promise<RawAnswer> {
    return new Promise<RawAnswer>((resolve, reject) => {
      this.phase = 'head';
      this.gotBytes = false;
      this.#onHead = resolve;
      this.#onFail = reject;
      this.#timeoutMs = timeoutMs;
      this.socket.ref();
      this.socket.setTimeout(timeoutMs);
      let head = `GET ${path} HTTP/1.1\r\nhost: ${hostHeader}\r\n`;
      for (const k in headers) head += `${k}: ${headers[k]}\r\n`;
      this.socket.write(`${head}\r\n`, 'latin1');
    });
  }

  /** The body wants more: resumes a socket paused for backpressure (and its timeout). */
  resume(body: Body): void {
    if (!this.#paused || this.#body !== body) return;
    this.#paused = false;
    this.socket.setTimeout(this.#timeoutMs);
    this.socket.resume();
  }

  /** `body` was destroyed: if it is still being read, the connection (with unread bytes) is closed. */
  abandon(body: Body): void {
    if (this.#body !== body) return;
    this.#body = undefined;
    this.phase = 'closed';
    this.socket.destroy();
  }

  /** Keeps the connection idle (unref'd, closed after `idleMs`), or closes it. */
  idle(idleMs: number): boolean {
    if (this.phase !== 'idle' || this.socket.destroyed) return false;
    this.reused = true;
    this.socket.setTimeout(idleMs);
    this.socket.unref();
    return true;
  }

  #onRead(n: number, buf: Buffer): void {
    this.gotBytes = true;
    if (this.phase === 'body') return this.#bodyBytes(buf, 0, n);
    if (this.phase === 'head') return this.#headBytes(buf, n);
    if (this.phase === 'text') {
      this.#textBytes += n;
      this.#text.push(Buffer.from(buf.subarray(0, n)));
      giveBack(buf);
      return this.#textProgress();
    }
    giveBack(buf);
    this.#fail(netError('the store sent bytes outside of an answer', 'ECONNRESET'));
  }

  #headBytes(buf: Buffer, n: number): void {
    const before = this.#head?.length ?? 0;
    const all = this.#head ? Buffer.concat([this.#head, buf.subarray(0, n)]) : buf.subarray(0, n);
    const end = all.indexOf('\r\n\r\n', Math.max(0, before - 3), 'latin1');
    if (end < 0) {
      this.#head = Buffer.from(all);
      giveBack(buf);
      if (this.#head.length > MAX_HEAD) this.#fail(netError('the store answered with a head over 64 KiB', 'ECONNRESET'));
      return;
    }
    this.#head = undefined;
    const lines = all.toString('latin1', 0, end).split('\r\n');
    const status = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0]!);
    const headers: Record<string, string> = {};
    for (let i = 1; i < lines.length; i++) {
      const c = lines[i]!.indexOf(':');
      if (c <= 0) continue;
      const k = lines[i]!.slice(0, c).trim().toLowerCase();
      const v = lines[i]!.slice(c + 1).trim();
      headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
    }
    const code = status ? Number(status[2]) : 0;
    if (!status || code < 200) {
      giveBack(buf);
      return this.#fail(netError(`the store answered ${JSON.stringify(lines[0]!.slice(0, 80))}`, 'ECONNRESET'));
    }
    if (status[1] === '0' || /(^|,)\s*close\s*(,|$)/i.test(headers.connection ?? '')) this.#reusable = false;
    const length = headers['content-length'];
    const te = headers['transfer-encoding'];
    const from = end + 4 - before; // first body byte within buf
    const body = new Body(this);
    const answer = { status: code, headers, body };
    const resolve = this.#onHead!;
    if (code >= 200 && code < 300) {
      if (te !== undefined || length === undefined || !/^\d{1,16}$/.test(length)) {
        giveBack(buf);
        return this.#fail(netError(`the store answered ${code} without a plain Content-Length`, 'ECONNRESET'));
      }
      this.phase = 'body';
      this.#body = body;
      this.#remaining = Number(length);
      resolve(answer);
      if (this.#remaining === 0) {
        giveBack(buf);
        if (n > from) this.#reusable = false;
        return this.#done();
      }
      if (n > from) this.#bodyBytes(buf, from, n);
      else giveBack(buf);
      return;
    }
    // An error answer: its text, then the connection is not reused.
    this.#reusable = false;
    this.phase = 'text';
    this.#body = body;
    this.#chunked = te !== undefined;
    this.#remaining = length !== undefined && /^\d{1,16}$/.test(length) ? Number(length) : -1;
    this.#text = [Buffer.from(buf.subarray(from, n))];
    this.#textBytes = n - from;
    giveBack(buf);
    resolve(answer);
    this.#textProgress();
  }

  #bodyBytes(buf: Buffer, from: number, n: number): void {
    const take = Math.min(n - from, this.#remaining);
    if (take < n - from) this.#reusable = false; // bytes past the answer: not a connection to reuse
    this.#remaining -= take;
    lend(buf);
    const more = this.#body!.push(buf.subarray(from, from + take));
    if (this.#remaining === 0) return this.#done();
    if (!more && !this.#paused) {
      this.#paused = true;
      this.socket.setTimeout(0);
      this.socket.pause();
    }
  }

  /** An error answer's text is complete (its length, the chunked terminator, or the cap). */
  #textProgress(): void {
    const all = Buffer.concat(this.#text);
    const complete = this.#remaining >= 0 ? this.#textBytes >= this.#remaining
      : this.#chunked ? all.subarray(-5).toString('latin1') === '0\r\n\r\n' : false;
    if (!complete && this.#textBytes <= MAX_HEAD) return;
    const body = this.#body!;
    this.#body = undefined;
    body.push(this.#remaining >= 0 ? all.subarray(0, this.#remaining) : all);
    body.push(null);
    this.#done();
  }

  /** The answer is complete: the body ends, the connection goes idle or closes. */
  #done(): void {
    const body = this.#body;
    this.#body = this.#onHead = this.#onFail = undefined;
    this.phase = 'idle';
    this.#paused = false;
    if (body && this.#remaining === 0) body.push(null);
    this.socket.setTimeout(0);
    if (this.#reusable) this.release(this);
    else {
      this.phase = 'closed';
      this.socket.destroy();
    }
  }

  #fail(e: Error): void {
    if (this.phase === 'closed') return;
    const was = this.phase;
    this.phase = 'closed';
    const body = this.#body;
    const reject = this.#onFail;
    this.#body = this.#onHead = this.#onFail = undefined;
    this.socket.destroy();
    if (was === 'head') reject?.(e);
    else if (was === 'body' || was === 'text') body?.destroy(e);
  }
}

/**
 * GETs over plain http with keep-alive connections per host (`KEEP_IDLE` idle at most, each
 * closed after `idleMs` unused). `timeoutMs` bounds the connect, the wait for the head and
 * every silence within the body (not a pause the reader of the body asked for).
 */
export class RawGetClient {
  readonly #idle = new Map<string, Conn[]>();
  constructor(readonly timeoutMs: number, readonly idleMs = 4000) {}

  /**
   * GET of `url` (http:) with `headers` (lower-case names; no Host, it is the URL's).
   * @returns the answer once its head arrived (its body then streams)
   * @throws Error with a network code (ECONNREFUSED, ECONNRESET, ETIMEDOUT…) when no answer came
   */
  async get(url: URL, headers: Record<string, string>): Promise<RawAnswer> {
    const key = url.host;
    const path = url.pathname + url.search;
    for (let attempt = 0; ; attempt++) {
      const conn = this.#take(key) ?? new Conn(url.hostname, Number(url.port || 80), (c) => this.#keep(key, c));
      try {
        return await conn.request(url.host, path, headers, this.timeoutMs);
      } catch (e) {
        if (attempt > 0 || !conn.reused || conn.gotBytes) throw e;
      }
    }
  }

  /** Closes every idle connection. */
  close(): void {
    for (const list of this.#idle.values()) for (const c of list) c.socket.destroy();
    this.#idle.clear();
  }

  #take(key: string): Conn | undefined {
    const list = this.#idle.get(key);
    let c: Conn | undefined;
    while ((c = list?.pop()) && (c.socket.destroyed || c.phase !== 'idle'));
    return c;
  }

  #keep(key: string, c: Conn): void {
    let list = this.#idle.get(key);
    if (!list) this.#idle.set(key, list = []);
    if (list.length >= KEEP_IDLE || !c.idle(this.idleMs)) {
      c.socket.destroy();
      return;
    }
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.socket.destroyed) list.splice(i, 1);
    list.push(c);
  }
}
