/**
 * The least a registry must do to store a push, run as its own process by bench/storing-limit.ts:
 * for each `PUT` with a body (the push client's monolithic upload), the body's bytes are read by
 * the kernel straight into the connection's 2 MiB buffers (node:net `onread`), hashed with
 * sha256, written through the page cache into a new file (up to 4 buffers in flight, the socket
 * paused while all four are busy); then the file is fdatasynced, checked against `?digest=`,
 * renamed into place and its directory fsynced, and only then answered 201 (400 and the file
 * removed on a digest mismatch, 500 on a failed write or sync). `POST` gets 202 with a session
 * Location; any other request without a body 202. No metadata, no auth, no sessions, no parser
 * beyond the request line and Content-Length; requests are not pipelined (the push client waits
 * for each answer), and a connection that sends a body other than a PUT's is closed. What is
 * left is the work every server that hashes, writes and syncs a pushed blob does per byte.
 *
 * argv: `<dir> <mode> [lanes]`. Modes: `inline` hashes each read's bytes on the main thread right
 * after the read (while they are in the CPU's caches; the main thread then does everything but
 * the writes); `thread` hands each full buffer to Slipway's own hash thread (workers/hash-thread.ts)
 * and reads on beside it; `mixed` hashes every other body inline and the rest on the thread. `lanes` (default
 * 0: no limit) is how many bodies read at once; a body that finds none free waits, its socket
 * paused, first come first served (as Slipway's body lanes, engine/blobs/body-lanes.ts, without
 * their time limits). Prints its port on stdout.
 */
import { createServer, Socket } from 'node:net';
import { close, fdatasync, fsync, open, openSync, rename, unlink, write } from 'node:fs';
import { join } from 'node:path';
import { HashThread } from '../../workers/hash-thread.js';
import { inlineHash, type RunningHash } from '../../engine/blobs/running-hash.js';

const BUFFER = 2 * 1024 * 1024;
const IN_FLIGHT = 4;
const HEAD_MAX = 64 * 1024;
const [dir = '.', mode = 'inline', lanesArg = '0'] = process.argv.slice(2);
/** Bodies read at once (0: every body at once); the others wait, their sockets paused, first come first served. */
const LANES = Number(lanesArg);
let lanesHeld = 0;
const laneQueue: Connection[] = [];
const dirFd = openSync(dir, 'r');
let sessions = 0;
let files = 0;

/** The hash thread of `thread` and `mixed` modes: Slipway's own (workers/hash-thread.ts), started now as the server starts it. */
const hashThread = new HashThread();
if (mode !== 'inline') hashThread.start();

/** One request body on its way into a file. */
interface Body {
  remaining: number;
  digest: string;
  path: string;
  fd: number;
  position: number;
  /** The body's running sha256: on this thread, or on the hash thread. */
  hash: RunningHash;
  /** The hash runs here and is fed each read's bytes as they arrive; else each full buffer goes to the hash thread. */
  perRead: boolean;
  /** The open and the buffers not yet back (written, and hashed by the thread). */
  pending: number;
  /** Writes waiting for the open. */
  queued: Array<() => void>;
  finished: boolean;
  failed: boolean;
  settled: boolean;
}

/** A keep-alive connection's buffers and the body it is reading. */
class Connection {
  /** Set right after the socket is built (the socket asks for its first read buffer while it is built). */
  socket!: Socket;
  readonly #head = Buffer.alloc(HEAD_MAX);
  /**
   * Where a read lands when every body buffer is busy: node:net asks for the next read's buffer
   * right after each read, before the socket is paused, so one read may come here; its bytes
   * wait in `#stash` until a buffer is back.
   */
  readonly #spare = Buffer.alloc(HEAD_MAX);
  #stash: Buffer | null = null;
  #headLength = 0;
  /** Free 2 MiB buffers (each its own SharedArrayBuffer, so the hash thread can read it). */
  readonly #free: Buffer[] = [];
  #made = 0;
  #current: Buffer | null = null;
  #fill = 0;
  #body: Body | null = null;
  #paused = false;
  #waitingLane = false;
  #holdsLane = false;

  /** This connection's body may read now (a lane came free). */
  grantLane(): void {
    this.#waitingLane = false;
    this.#holdsLane = true;
    this.#maybeResume();
  }

  /** Where the kernel puts the next read: the body's buffer (never past its end) or the head buffer. */
  region(): Buffer {
    const body = this.#body;
    if (body && body.remaining > 0) {
      const cur = this.#take();
      if (cur) return cur.subarray(this.#fill, this.#fill + Math.min(BUFFER - this.#fill, body.remaining));
      return this.#spare.subarray(0, Math.min(HEAD_MAX, body.remaining));
    }
    return this.#head.subarray(this.#headLength);
  }

  read(n: number, buf: Buffer): void {
    if (buf.buffer === this.#head.buffer) this.#readHead(n);
    else if (buf.buffer === this.#spare.buffer) {
      this.#stash = Buffer.from(buf.subarray(0, n));
      this.#pause();
      this.#drainStash();
      this.#maybeResume();
    } else this.#readBody(n);
  }

  /** Reads again once nothing waits in the stash and a buffer can take the next read (or no body is being read). */
  #maybeResume(): void {
    if (this.#paused && !this.#waitingLane && !this.#stash && (this.#current || this.#free.length > 0 || this.#made < IN_FLIGHT || !this.#body)) {
      this.#paused = false;
      this.socket.resume();
    }
  }

  #pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.socket.pause();
  }

  /** Moves stashed bytes into body buffers while there are free ones. */
  #drainStash(): void {
    while (this.#stash && this.#body) {
      const cur = this.#take();
      if (!cur) return;
      const k = Math.min(BUFFER - this.#fill, this.#stash.length);
      this.#stash.copy(cur, this.#fill, 0, k);
      this.#stash = k < this.#stash.length ? this.#stash.subarray(k) : null;
      this.#readBody(k);
    }
  }

  #take(): Buffer | null {
    if (this.#current) return this.#current;
    let b = this.#free.pop();
    if (!b && this.#made < IN_FLIGHT) {
      b = Buffer.from(new SharedArrayBuffer(BUFFER));
      this.#made++;
    }
    if (!b) return null;
    this.#current = b;
    this.#fill = 0;
    return b;
  }

  #readHead(n: number): void {
    this.#headLength += n;
    const end = this.#head.subarray(0, this.#headLength).indexOf('\r\n\r\n');
    if (end < 0) return;
    const text = this.#head.subarray(0, end).toString('latin1');
    const rest = this.#head.subarray(end + 4, this.#headLength);
    const [method = '', target = '/'] = text.slice(0, text.indexOf('\r\n')).split(' ');
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1] ?? 0);
    const url = new URL(target, 'http://sink');
    if (length > 0 && method === 'PUT') {
      // The push client waits for each answer before its next request: bytes past the body
      // would be a pipelined request, which this sink does not take.
      if (rest.length > length) return void this.socket.destroy();
      const leftover = Buffer.from(rest);
      this.#headLength = 0;
      this.#startBody(length, url.searchParams.get('digest') ?? '', leftover);
      return;
    }
    if (length > 0) return void this.socket.destroy(); // a body the push client never sends
    const next = Buffer.from(rest);
    this.#headLength = 0;
    this.#answer('202 Accepted', method === 'POST' ? `/v2/sink/blobs/uploads/${++sessions}` : url.pathname, '');
    if (next.length > 0) {
      next.copy(this.#head);
      this.#readHead(next.length);
    }
  }

  #startBody(length: number, digest: string, leftover: Buffer): void {
    const path = join(dir, `upload-${++files}`);
    const perRead = mode === 'inline' || (mode === 'mixed' && files % 2 === 0);
    const body: Body = { remaining: length, digest, path, fd: -1, position: 0, hash: perRead ? inlineHash() : hashThread.create(), perRead, pending: 1, queued: [], finished: false, failed: false, settled: false };
    this.#body = body;
    open(path, 'w', 0o600, (err, fd) => {
      if (err) body.failed = true;
      else body.fd = fd;
      body.pending--;
      for (const w of body.queued.splice(0)) w();
      this.#settle(body);
    });
    if (leftover.length > 0) {
      const cur = this.#take()!;
      leftover.copy(cur, this.#fill);
      this.#readBody(leftover.length);
    }
    // A body that came whole with its head never waits for a lane.
    if (LANES > 0 && this.#body === body) {
      if (lanesHeld < LANES) {
        lanesHeld++;
        this.#holdsLane = true;
      } else {
        this.#waitingLane = true;
        laneQueue.push(this);
        this.#pause();
      }
    }
  }

  #readBody(n: number): void {
    const body = this.#body!;
    const cur = this.#current!;
    if (body.perRead) body.hash.update(cur.subarray(this.#fill, this.#fill + n), () => {});
    this.#fill += n;
    body.remaining -= n;
    if (this.#fill === BUFFER || body.remaining === 0) this.#flush(body);
    if (body.remaining === 0) {
      if (this.#holdsLane) {
        this.#holdsLane = false;
        const next = laneQueue.shift();
        if (next) next.grantLane();
        else lanesHeld--;
      }
      body.finished = true;
      this.#body = null;
      this.#settle(body);
    } else if (!this.#current && this.#free.length === 0 && this.#made >= IN_FLIGHT) {
      this.#pause();
    }
  }

  /** Hands the current buffer to the write (and the hash thread); it comes back when both are done. */
  #flush(body: Body): void {
    const buf = this.#current!;
    const length = this.#fill;
    this.#current = null;
    this.#fill = 0;
    let holds = body.perRead ? 1 : 2;
    const back = () => {
      if (--holds > 0) return;
      this.#free.push(buf);
      body.pending--;
      this.#drainStash();
      this.#maybeResume();
      this.#settle(body);
    };
    body.pending++;
    if (!body.perRead) body.hash.update(buf.subarray(0, length), back);
    const position = body.position;
    body.position += length;
    const start = () => {
      if (body.failed) return back();
      write(body.fd, buf, 0, length, position, (err) => {
        if (err) body.failed = true;
        back();
      });
    };
    if (body.fd >= 0 || body.failed) start();
    else body.queued.push(start);
  }

  /** Once the body ended and every write is back: sync, check the digest, rename, sync the directory, answer. */
  #settle(body: Body): void {
    if (!body.finished || body.pending > 0 || body.settled) return;
    body.settled = true;
    const answer = (ok: boolean, hex: string) => {
      const status = !ok ? '500 Internal Server Error' : `sha256:${hex}` === body.digest ? '201 Created' : '400 Bad Request';
      this.#answer(status, '/v2/sink/blobs/' + body.digest, body.digest);
    };
    if (body.failed) {
      body.hash.discard();
      if (body.fd >= 0) close(body.fd, () => {});
      return answer(false, '');
    }
    fdatasync(body.fd, (err) => close(body.fd, () => {
      void body.hash.digest().then((hex) => {
        // A lost hash (the thread died) is a failure here: the sink does not re-hash.
        if (err || hex === null) return answer(false, '');
        if (`sha256:${hex}` !== body.digest) return unlink(body.path, () => answer(true, hex));
        rename(body.path, join(dir, `blob-${hex}`), (e) => fsync(dirFd, (e2) => answer(!e && !e2, hex)));
      });
    }));
  }

  #answer(status: string, location: string, digest: string): void {
    this.socket.write([`HTTP/1.1 ${status}`, `location: ${location}`, ...(digest ? [`docker-content-digest: ${digest}`] : []), 'content-length: 0', '', ''].join('\r\n'));
  }
}

// node:net offers `onread` only to sockets it constructs: each accepted socket's handle moves
// into one built with it (as server/http/h1-server.ts does).
const server = createServer((accepted) => {
  const internal = accepted as unknown as { _handle?: object | null };
  const handle = internal._handle;
  internal._handle = null;
  accepted.destroy();
  const conn = new Connection();
  const options = { handle, allowHalfOpen: false, readable: true, writable: true, onread: { buffer: () => conn.region(), callback: (n: number, buf: Buffer) => conn.read(n, buf) } };
  const socket = new Socket(options as unknown as ConstructorParameters<typeof Socket>[0]);
  conn.socket = socket;
  socket.setNoDelay(true);
  socket.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`${typeof a === 'object' && a ? a.port : 0}\n`);
});
