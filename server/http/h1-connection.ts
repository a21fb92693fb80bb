/**
 * One HTTP/1.1 connection of the upload host's own listener: reads request heads and bodies,
 * hands each request to the handler one at a time (responses stay in order), writes responses,
 * keeps the connection alive between requests.
 *
 * Why not node:http: for bulk bodies it allocates a fresh 64 KiB buffer per socket read and runs
 * llhttp over every byte; measured on a 1 GiB PATCH that was 0.86 s of server CPU for receiving
 * alone, against 0.29 s here, where a Content-Length body is read by the kernel straight into the
 * upload writer's pool buffers (the BodySink `region`/`commit` path; see h1-server.ts for how the
 * socket is given user buffers). Bytes of a chunked body, of a TLS connection, or read while the
 * sink was full arrive in a per-connection scratch buffer and are copied once.
 */
import type { Socket } from 'node:net';
import { bodyFraming, HttpParseError, keepsAlive, parseHead, type BodyFraming, type RequestHead } from './h1-head.js';
import { ChunkedDecoder } from './h1-chunked.js';
import type { ResponseHeaders } from './exchange.js';
import { connectionTrailer, responseHead } from './h1-response.js';

/** Timeouts of a connection (ms). */
export interface ConnectionTimeouts {
  /**
   * Keep-alive idle time, and the most time a request head may take from its first byte: a
   * client trickling header bytes (slowloris) is cut off even though it is never idle.
   */
  headMs: number;
  /** Idle time allowed while a body is being received or a response sent. */
  transferIdleMs: number;
}

/** Defaults: 30 s for heads and keep-alive idle, 300 s of silence within a transfer. */
export const DEFAULT_TIMEOUTS: ConnectionTimeouts = { headMs: 30_000, transferIdleMs: 300_000 };

/** Receives one request's body; `region`/`committed` is the zero-copy path for Content-Length bodies. */
export interface BodyConsumer {
  /** Body bytes (valid only during the call). */
  data(chunk: Buffer): void;
  /** Free space the next socket read may fill directly, or null. */
  region?(): Buffer | null;
  /** `n` bytes were read into the last region handed out. */
  committed?(n: number): void;
  end(): void;
  abort(e: Error): void;
}

/** Starts handling a request; called once per request head. */
export type RequestListener = (conn: Connection, head: RequestHead) => void;

type State = 'head' | 'body' | 'wait' | 'closed';

/** Size of the read that follows a resume of a paused Content-Length body (bytes; copied). */
const PAUSED_READ_BYTES = 4096;
/** Most bytes of pipelined requests read while one is handled; below it a request costs no socket pause and resume. */
const MAX_WAITING_BYTES = 16 * 1024;
/** Bodies up to this size are copied behind the head and written as one buffer (writeHead). */
const SMALL_BODY_BYTES = 64 * 1024;

const discard: BodyConsumer = { data: () => {}, end: () => {}, abort: () => {} };

/**
 * One client connection: state machine head → body → wait (handler running) → head again, or
 * closed. The listener feeds it socket bytes (`onRead`/`onBytes`) and asks it where the next
 * read goes (`nextReadBuffer`); the exchange (h1-server.ts) attaches the body consumer and
 * writes the response through it.
 */
export class Connection {
  readonly socket: Socket;
  #state: State = 'head';
  #pending: Buffer | null = null;
  #framing: BodyFraming = { kind: 'none' };
  #remaining = 0;
  #decoder: ChunkedDecoder | null = null;
  #consumer: BodyConsumer | null = null;
  #queued: Buffer[] | null = null;
  #bodyDone = true;
  #responded = false;
  #keepAlive = true;
  #continuePending = false;
  #sinkFull = false;
  #paused = false;
  #region: Buffer | null = null;
  #abortWaiters: Array<() => void> = [];
  #headDeadline: NodeJS.Timeout | null = null;
  #idleMs: number; // the socket's idle timeout (ms), set only when it changes (each change makes a timer)
  /** The client half-closed: answer what it asked, then close. */
  #peerEnded = false;
  readonly #keepAliveTrailer: string;

  constructor(socket: Socket, readonly onRequest: RequestListener, readonly timeouts: ConnectionTimeouts = DEFAULT_TIMEOUTS) {
    this.socket = socket;
    this.#idleMs = timeouts.headMs;
    this.#keepAliveTrailer = connectionTrailer(true, Math.floor(timeouts.headMs / 1000));
    socket.setNoDelay(true);
    socket.setTimeout(timeouts.headMs);
    socket.on('timeout', () => this.#timedOut()); // not setTimeout's callback: that one is called once
    socket.on('error', () => {});
    socket.on('close', () => this.#closed());
    socket.on('end', () => this.#clientEnded());
  }

  /** True once the connection is closed or closing: nothing more may be written. */
  get closed(): boolean {
    return this.#state === 'closed';
  }

  /**
   * Buffer for the next socket read: a sink region when streaming a Content-Length body. While
   * the sink is full the socket is paused, but node:net asks for the buffer of the read that
   * follows the resume now: a small part of the scratch buffer, so that read copies only a few
   * bytes and the reads after it go straight into the sink again.
   */
  nextReadBuffer(scratch: Buffer): Buffer {
    this.#region = null;
    if (this.#state === 'body' && this.#framing.kind === 'length' && this.#consumer?.region && this.#remaining > 0) {
      if (this.#sinkFull) return scratch.subarray(0, PAUSED_READ_BYTES);
      const r = this.#consumer.region();
      if (r && r.length > 0) {
        this.#region = r.length > this.#remaining ? r.subarray(0, this.#remaining) : r;
        return this.#region;
      }
    }
    return scratch;
  }

  /** Bytes read by the socket: `n` bytes at the start of `buf` (a region or scratch). */
  onRead(n: number, buf: Buffer): void {
    if (buf === this.#region && this.#consumer?.committed) {
      this.#region = null;
      this.#remaining -= n;
      this.#consumer.committed(n);
      if (this.#remaining === 0) this.#bodyComplete();
      this.#updateFlow();
      return;
    }
    this.onBytes(buf.subarray(0, n), false);
  }

  /**
   * Bytes from the socket. `owned` is false when `buf` is a scratch view overwritten after this
   * call: whatever is kept is copied.
   */
  onBytes(buf: Buffer, owned: boolean): void {
    if (this.#state === 'body' && !this.#pending) {
      const used = this.#deliver(buf, owned);
      buf = buf.subarray(used);
      if (buf.length === 0 || (this.#state as State) === 'closed') return this.#updateFlow();
    }
    if (this.#state === 'closed') return;
    this.#pending = this.#pending ? Buffer.concat([this.#pending, buf]) : owned ? buf : Buffer.from(buf);
    this.#process();
  }

  #process(): void {
    while (this.#pending && (this.#state === 'head' || this.#state === 'body')) {
      if (this.#state === 'head') {
        let head: RequestHead | null;
        let framing: BodyFraming;
        try {
          head = parseHead(this.#pending);
          if (!head) {
            this.#startHeadDeadline();
            break;
          }
          framing = bodyFraming(head);
        } catch (e) {
          return this.#refuse(e as Error);
        }
        this.#pending = head.length < this.#pending.length ? this.#pending.subarray(head.length) : null;
        this.#start(head, framing);
      } else {
        // Taken out first: finishing the body may start the next request re-entrantly.
        const buf = this.#pending;
        this.#pending = null;
        const used = this.#deliver(buf, true);
        if (used < buf.length) this.#pending = this.#pending ? Buffer.concat([buf.subarray(used), this.#pending]) : buf.subarray(used);
      }
    }
    this.#updateFlow();
  }

  #startHeadDeadline(): void {
    if (this.#headDeadline) return;
    this.#headDeadline = setTimeout(() => this.socket.destroy(), this.timeouts.headMs);
    this.#headDeadline.unref();
  }

  #clearHeadDeadline(): void {
    if (this.#headDeadline) clearTimeout(this.#headDeadline);
    this.#headDeadline = null;
  }

  #start(head: RequestHead, framing: BodyFraming): void {
    this.#framing = framing;
    // A client that half-closed after this request gets its answer, then the connection closes.
    this.#keepAlive = keepsAlive(head) && !(this.#peerEnded && !this.#pending);
    this.#responded = false;
    this.#consumer = null;
    this.#queued = null;
    this.#sinkFull = false;
    this.#bodyDone = framing.kind === 'none';
    this.#remaining = framing.kind === 'length' ? framing.length : 0;
    this.#decoder = framing.kind === 'chunked' ? new ChunkedDecoder() : null;
    this.#continuePending = !this.#bodyDone && (head.headers.get('expect') ?? '').toLowerCase() === '100-continue';
    this.#state = this.#bodyDone ? 'wait' : 'body';
    this.#clearHeadDeadline();
    // While the handler works on a bodiless request the head timeout stays armed (#timedOut
    // ignores it then): re-arming per request would cost two timer changes.
    if (!this.#bodyDone) this.#idle(this.timeouts.transferIdleMs);
    // The handler starts after the current read is processed (no re-entrant parsing).
    queueMicrotask(() => this.onRequest(this, head));
  }

  /** Feeds body bytes of the current request; returns how many of `buf` belonged to it. */
  #deliver(buf: Buffer, owned: boolean): number {
    let used: number;
    if (this.#decoder) {
      try {
        used = this.#decoder.feed(buf, (p) => this.#emit(p, owned));
      } catch (e) {
        this.#refuse(e as Error);
        return buf.length;
      }
      if (this.#decoder.done) this.#bodyComplete();
    } else {
      used = Math.min(this.#remaining, buf.length);
      this.#remaining -= used;
      this.#emit(used === buf.length ? buf : buf.subarray(0, used), owned);
      if (this.#remaining === 0) this.#bodyComplete();
    }
    return used;
  }

  #emit(chunk: Buffer, owned: boolean): void {
    if (chunk.length === 0) return;
    if (this.#consumer) this.#consumer.data(chunk);
    else (this.#queued ??= []).push(owned ? chunk : Buffer.from(chunk));
  }

  #bodyComplete(): void {
    this.#bodyDone = true;
    this.#decoder = null;
    // The client sent the whole body without waiting for 100 Continue: nothing is owed, and the
    // connection can stay open (RFC 9110 §10.1.1).
    this.#continuePending = false;
    if (this.#responded) return this.#next();
    this.#state = 'wait';
    this.#consumer?.end();
  }

  /**
   * Attaches the body consumer of the current request (once). Bytes that arrived before are
   * delivered first.
   */
  consumeBody(consumer: BodyConsumer): void {
    if (this.#state === 'closed') return consumer.abort(new Error('client closed the connection'));
    this.#consumer = consumer;
    const queued = this.#queued;
    this.#queued = null;
    if (queued) for (const c of queued) consumer.data(c);
    if (this.#bodyDone) return consumer.end();
    if (this.#continuePending) {
      this.#continuePending = false;
      this.socket.write('HTTP/1.1 100 Continue\r\n\r\n');
    }
    this.#updateFlow();
  }

  /** The consumer cannot take more now (false) or can again (true). */
  setSinkReady(ready: boolean): void {
    this.#sinkFull = !ready;
    this.#updateFlow();
  }

  /** Stops giving body bytes to the consumer; they are read and dropped. */
  discardBody(): void {
    if (this.#bodyDone || this.#state === 'closed') return;
    this.#consumer = discard;
    this.#sinkFull = false;
    this.#updateFlow();
  }

  #updateFlow(): void {
    const want = this.#state === 'head'
      || (this.#state === 'wait' && (this.#pending?.length ?? 0) < MAX_WAITING_BYTES)
      || (this.#state === 'body' && this.#consumer !== null && !this.#sinkFull);
    if (want && this.#paused) {
      this.#paused = false;
      this.socket.resume();
    } else if (!want && !this.#paused && this.#state !== 'closed') {
      this.#paused = true;
      this.socket.pause();
    }
  }

  /**
   * Writes a response head (Content-Length given; h1-response.ts `responseHead`, with
   * `request-id: <requestId>` unless `headers` has one) and, when `body` is set, the whole body,
   * in one socket write; when `final`, the exchange is done. Further body bytes are written to
   * `socket` (h1-server.ts), then `endResponse`.
   */
  writeHead(status: number, headers: ResponseHeaders, length: number, requestId: string, body?: Buffer, final = true): void {
    if (this.#state === 'closed') return;
    this.#responded = true;
    if (this.#continuePending) this.#keepAlive = false; // the client may never send the body it announced
    if (headers.connection === 'close') this.#keepAlive = false; // a handler ends the connection (a body cut off)
    const head = responseHead(status, headers, length, requestId, this.#keepAlive ? this.#keepAliveTrailer : connectionTrailer(false, 0));
    if (body && body.length > 0 && body.length <= SMALL_BODY_BYTES) {
      // One buffer, one plain write: a corked pair takes node:net's slower writev path.
      const out = Buffer.allocUnsafe(head.length + body.length);
      out.write(head, 0, 'latin1');
      body.copy(out, head.length);
      this.socket.write(out);
    } else if (body && body.length > 0) {
      this.socket.cork();
      this.socket.write(head, 'latin1');
      this.socket.write(body);
      this.socket.uncork();
    } else {
      this.socket.write(head, 'latin1');
    }
    if (final) this.endResponse();
    else this.#idle(this.timeouts.transferIdleMs);
  }

  /** Ends the current response; the next request is read once the request body is complete. */
  endResponse(): void {
    if (this.#state === 'closed') return;
    if (this.#bodyDone) return this.#next();
    // Answered before the body was read: read the rest and drop it, so the client sees this
    // response (closing with unread bytes would make the kernel reset the connection).
    this.#consumer?.abort(new Error('response sent before the request body was read'));
    this.#consumer = discard;
    this.#sinkFull = false;
    if (!this.#keepAlive) return this.#next();
    this.#updateFlow();
  }

  #next(): void {
    this.#consumer = null;
    this.#abortWaiters.length = 0;
    if (!this.#keepAlive) {
      this.#state = 'closed';
      this.socket.end();
      return;
    }
    this.#state = 'head';
    this.#responded = false; // a malformed next head is answered too (#refuse)
    this.#idle(this.timeouts.headMs);
    this.#process();
    // The client half-closed while requests were pending: all complete ones are answered.
    if (this.#peerEnded && this.#state === 'head') this.#clientEnded();
  }

  #idle(ms: number): void {
    if (ms === this.#idleMs) return;
    this.#idleMs = ms;
    this.socket.setTimeout(ms);
  }

  /** Idle past the timeout; while a handler works on a complete request, the timer is only re-armed. */
  #timedOut(): void {
    if (this.#state === 'wait' && !this.#responded) this.socket.setTimeout(this.#idleMs);
    else this.socket.destroy();
  }

  /** Registers a callback for the connection closing before the current request is done. */
  onAbort(cb: () => void): void {
    if (this.#state === 'closed') cb();
    else this.#abortWaiters.push(cb);
  }

  #refuse(e: Error): void {
    const status = e instanceof HttpParseError ? e.status : 400;
    if (!this.#responded && this.#state !== 'closed') {
      const body = Buffer.from(`${e.message}\n`);
      this.#keepAlive = false;
      this.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }, body.length, '', body, false);
    }
    this.#state = 'closed';
    this.socket.end();
    this.#fail(new Error(e.message));
  }

  #clientEnded(): void {
    this.#peerEnded = true;
    if (this.#state === 'head' && !this.#pending) {
      this.#state = 'closed';
      this.socket.end();
    } else if (this.#state === 'body' || this.#state === 'head') {
      this.#state = 'closed';
      this.socket.destroy();
      this.#fail(new Error('client closed the connection mid-request'));
    } else if (this.#state === 'wait' && !this.#pending) {
      this.#keepAlive = false; // answer the request in progress, then close
    } // else: requests are pending; #next closes once they are answered
  }

  #closed(): void {
    this.#clearHeadDeadline();
    const wasOpen = this.#state !== 'closed' || !this.#bodyDone;
    this.#state = 'closed';
    if (wasOpen) this.#fail(new Error('client closed the connection'));
    const waiters = this.#abortWaiters;
    this.#abortWaiters = [];
    for (const w of waiters) w();
  }

  #fail(e: Error): void {
    const consumer = this.#consumer;
    this.#consumer = discard;
    if (!this.#bodyDone) consumer?.abort(e);
  }
}
