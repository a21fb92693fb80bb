/**
 * Reading committed blobs from the filesystem store (the pull path), and the policy that picks,
 * per pull, between the page cache and direct reads (docs/storage.md "Pulls: which reads go
 * through the page cache").
 *
 * Pushed bytes are written through the page cache (fs-writer.ts), so a blob pulled right after
 * its push is in memory and is read from there: measured 2026-11-26 on the project's VM, 4 MiB
 * reads from the cache ran at 6.9 GB/s for 0.12 CPU-s per GiB. A blob that is not in the cache
 * is another matter: read through the cache, such a pull is slow and costly in this kind of VM
 * (2026-11-24, 1 GiB, 4 MiB reads: 178–500 MB/s and 0.8–2.8 s of kernel CPU: the cache's fresh
 * pages); read with `O_DIRECT` into page-aligned buffers, it runs at the disk's pace (530–1 200
 * MB/s with 2–4 reads in flight, 0.1–0.15 s of kernel CPU). Linux gives a process no cheap way
 * to ask whether a file is cached (`mincore` needs a mapping, and neither it nor
 * `preadv2(RWF_NOWAIT)` nor `posix_fadvise` is reachable from Node), so the choice is made from
 * what this process saw (`PullHeat`):
 *
 * - a pull of fewer than `DIRECT_MIN_BYTES` is read through the cache (small blobs: configs,
 *   small layers; their cost is per request, not per byte);
 * - a blob this process wrote (committed from an upload) or pulled within the last
 *   `HOT_WINDOW_MS`, or one being pulled now, is read through the cache: a pull right after the
 *   push, and every later pull of a base layer pulled by many dynos, is served from memory;
 * - any other blob (written longer ago, or before a restart) is read with `O_DIRECT`,
 *   `DIRECT_DEPTH` reads of `DIRECT_CHUNK` ahead of the socket, and leaves the cache alone; a
 *   second pull within the window then brings it in.
 *
 * A pull of at least `DIRECT_MIN_BYTES` reads ahead when it goes through the page cache too (the
 * next reads under way while the socket sends), in reads of `cachedAheadChunk` (larger when fewer
 * pulls read ahead at once), into upload-sized buffers borrowed from the process's pool of
 * shared buffers (their pages touched lately).
 *
 * Direct reads need the file offset, length and memory aligned: reads start at the 4 KiB
 * boundary at or before the wanted byte, and the caller is lent a view inside the aligned buffer.
 * A file system refusing `O_DIRECT` (EINVAL) is remembered and read through the cache after.
 */
import { close, constants as fsc, open, read } from 'node:fs';
import type { promises as fsp } from 'node:fs';
import type { Digest } from '../digest.js';
import type { BlobReader } from './contract.js';
import { DIRECT_IO_ALIGN, recycleShared, sharedBuffer } from './aligned-buffer.js';
import { RecentMap } from '../recent-map.js';

/** Pulls shorter than this are always read through the page cache (bytes). */
export const DIRECT_MIN_BYTES = 8 * 1024 * 1024;
/** Size of one direct read (bytes; a multiple of 64 KiB). 4 MiB measured best with 2–4 in flight. */
export const DIRECT_CHUNK = 4 * 1024 * 1024;
/**
 * Size of the buffers a pull through the page cache reads ahead into (bytes): the size of the
 * upload buffers (writer-buffers.ts), so such a pull borrows free upload buffers from the
 * process's pool (aligned-buffer.ts `sharedBuffer`) and gives them back there. Those pages were
 * touched lately: a fresh page costs 15–40 µs on the project's VM, and the first large pull of a
 * server spent 0.04–0.05 s per pool thread faulting in new 4 MiB buffers (2026-11-28).
 */
export const CACHED_BUFFER_BYTES = 2 * 1024 * 1024;

/**
 * Size of one read ahead through the page cache (bytes; multiples of DIRECT_IO_ALIGN, at most
 * CACHED_BUFFER_BYTES), by how many pulls read ahead at once. A read from the cache is a memory
 * copy into a buffer the socket then copies from:
 * - many pulls at once want small reads: 16 pulls each copying 4 MiB ahead moved more than the
 *   CPU's caches hold. Measured 2026-11-27 (`pull_concurrent`, 16 × 64 MiB right after their
 *   push): 4 MiB 1,258–1,515 MB/s with 0.63–0.77 s/GiB of kernel time in the pool threads;
 *   1 MiB 2,108 MB/s and 0.18 s/GiB; 256 KiB 1,626 MB/s; 2026-11-28: 2 MiB 1,831–1,985 MB/s
 *   and 0.69–0.72 server CPU-s/GiB against 1 MiB's 2,035–2,133 and 0.57–0.61;
 * - a pull alone wants large ones: each read is a hand-off to a pool thread and back (a futex
 *   wake of 35 µs on this VM), and each lent buffer one socket write. Measured 2026-11-28 (one
 *   1 GiB pull from the cache, eight pulls a variant, two rounds interleaved): 1 MiB 0.39–0.48
 *   server CPU-s/GiB, the main thread's system time 0.26–0.30 s; 2 MiB 0.31–0.45 and 0.18–0.34;
 *   4 MiB 0.32–0.41 and 0.20–0.26.
 */
export function cachedAheadChunk(pullsReadingAhead: number): number {
  return pullsReadingAhead <= 2 ? CACHED_BUFFER_BYTES : 1024 * 1024;
}
/** Buffers a direct pull uses at most: one lent to the sender, the rest read ahead. */
const DIRECT_DEPTH = 4;
/** Buffers a direct pull needs at least (one lent, one read ahead). */
const DIRECT_MIN_DEPTH = 2;
/**
 * Aligned read buffers out at once at most (160 MiB of 4 MiB buffers): 16 direct pulls at
 * once get at least two each; past that, pulls read through the page cache.
 */
const POOL_MAX_BUFFERS = 40;
/** Free aligned buffers kept for the next pull (fresh pages are expensive in this VM). */
const POOL_KEEP_FREE = 8;
/** A blob pulled within this long is read through the page cache (ms). */
export const HOT_WINDOW_MS = 10 * 60 * 1000;
/** Blobs `PullHeat` remembers at most (the latest half of them at least: recent-map.ts). */
const HEAT_ENTRIES = 20_000;
/** Buffer of a pull read through the page cache (bytes). */
const CACHED_CHUNK = 2 * 1024 * 1024;

/**
 * Which blobs this process wrote or pulled recently, and which are being pulled now: the
 * evidence for "this blob is probably in the page cache" (see the file header). Bounded; in
 * memory only (a restart forgets, and the next pull of each blob is direct again).
 */
export class PullHeat {
  readonly #last = new RecentMap<string, number>(HEAT_ENTRIES);
  readonly #running = new Map<string, number>();

  constructor(readonly windowMs = HOT_WINDOW_MS, readonly now: () => number = Date.now) {}

  /**
   * Records a pull of `digest` starting; returns whether it should read through the page cache
   * (another pull of it runs, or one started within the window). Pair with `end`.
   */
  begin(digest: Digest): boolean {
    const t = this.now();
    const last = this.#last.get(digest);
    const running = this.#running.get(digest) ?? 0;
    this.#running.set(digest, running + 1);
    this.#last.set(digest, t);
    return running > 0 || (last !== undefined && t - last < this.windowMs);
  }

  /** `digest` was just written through the page cache (an upload committed it). */
  written(digest: Digest): void {
    this.#last.set(digest, this.now());
  }

  /** A pull of `digest` recorded by `begin` ended. */
  end(digest: Digest): void {
    const n = (this.#running.get(digest) ?? 1) - 1;
    if (n > 0) this.#running.set(digest, n);
    else this.#running.delete(digest);
  }
}

/**
 * The pulls' read-ahead buffers: at most `POOL_MAX_BUFFERS` out at once. Direct reads get 4 MiB
 * page-aligned buffers, kept here when free (up to `POOL_KEEP_FREE`); reads through the page
 * cache get `CACHED_BUFFER_BYTES` buffers of the process's shared pool, given back there.
 */
class ReadBuffers {
  readonly #free: Buffer[] = [];
  #out = 0;
  #pulls = 0;

  /** Pulls holding buffers now (each `take` that got some, until its `give`). */
  get pulls(): number {
    return this.#pulls;
  }

  /**
   * Up to `want` buffers for direct reads or reads through the cache, fewer as the pool runs low
   * (an eighth of what is left, so that many pulls at once each get some), none when fewer than
   * `least` can be had.
   */
  take(want: number, least: number, direct: boolean): Buffer[] {
    const left = POOL_MAX_BUFFERS - this.#out;
    const n = Math.min(want, left, Math.max(least, Math.floor(left / 8)));
    if (n < least) return [];
    this.#out += n;
    this.#pulls++;
    const one = direct ? () => this.#free.pop() ?? sharedBuffer(DIRECT_CHUNK) : () => sharedBuffer(CACHED_BUFFER_BYTES);
    return Array.from({ length: n }, one);
  }

  /** Returns a pull's buffers (all that its `take` gave) once no read writes into them and no socket holds them. */
  give(buffers: Buffer[]): void {
    this.#out -= buffers.length;
    this.#pulls--;
    for (const b of buffers) {
      if (b.length !== DIRECT_CHUNK) recycleShared(b);
      else if (this.#free.length < POOL_KEEP_FREE) this.#free.push(b);
    }
  }
}

const pool = new ReadBuffers();

/** Whether the file system took `O_DIRECT` reads so far (false after the first EINVAL, and where Node has no `O_DIRECT`). */
let directUsable = fsc.O_DIRECT !== undefined;

function readAt(fd: number, into: Buffer, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, into, 0, length, position, (e, n) => (e ? reject(e) : resolve(n))));
}

/** One read ahead in flight (direct or through the cache): `buffer` gets the bytes from file offset `at`. */
interface Ahead {
  at: number;
  buffer: Buffer;
  done: Promise<number>;
}

/**
 * A committed blob's open descriptor: positional reads into the caller's buffer (`read`, through
 * the page cache), and `lend` for senders, which picks the page cache or direct reads ahead by
 * the policy in the file header.
 */
export class FsReader implements BlobReader {
  #closed = false;
  /** undefined until the first `lend`; then 'cached' or 'direct'. */
  #mode: 'cached' | 'direct' | undefined;
  #heat: PullHeat | undefined;
  #cached: Buffer | undefined;
  #directFd: number | undefined;
  /** The descriptor the reads ahead use: the direct one, or the handle's (through the cache). */
  #fd = -1;
  #buffers: Buffer[] = [];
  /** Buffers not lent and not being read into. */
  #idle: Buffer[] = [];
  #ahead: Ahead[] = [];
  /** File offset of the next read to issue, and where read-ahead stops (aligned up). */
  #next = 0;
  #stop = 0;
  /** The byte the next `lend` is expected at (read-ahead continues from there). */
  #expect = -1;
  #lent: Buffer | undefined;

  /**
   * @param handle the blob's open file (the reader closes it); direct reads reopen its inode
   * @param size the file's size in bytes
   * @param heat the backend's memory of recent pulls (the policy of the file header)
   */
  constructor(readonly digest: Digest, readonly handle: fsp.FileHandle, readonly size: number, heat: PullHeat) {
    this.#heat = heat;
  }

  /** How `lend` reads: 'cached' or 'direct' once decided, undefined before the first `lend`. */
  get mode(): 'cached' | 'direct' | undefined {
    return this.#mode;
  }

  async read(into: Uint8Array, position: number): Promise<number> {
    let done = 0;
    while (done < into.byteLength) {
      const { bytesRead } = await this.handle.read(into, done, into.byteLength - done, position + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done;
  }

  /**
   * Bytes of the blob from `position`, at most `length` (the rest the sender will ask for, so
   * read-ahead stops there), in a buffer the reader owns: valid until the next `lend` or `close`.
   * Resolves with at least one byte unless `position` is at or past the end.
   * @throws on I/O errors of the medium.
   */
  async lend(position: number, length: number): Promise<Uint8Array> {
    if (this.#closed) throw new Error('blob reader closed');
    const want = Math.min(length, this.size - position);
    if (want <= 0) return new Uint8Array(0);
    if (this.#mode === undefined) this.#decide(want);
    if (this.#mode === 'direct' && this.#directFd === undefined) {
      try {
        // The open descriptor's inode, even if GC unlinked the name meanwhile.
        this.#directFd = await openDirect(`/proc/self/fd/${this.handle.fd}`);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EINVAL') directUsable = false; // the page cache from now on
        this.#mode = 'cached';
      }
    }
    if (this.#buffers.length > 0) {
      try {
        return await this.#lendAhead(position, want);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EINVAL' || this.#mode !== 'direct') throw e;
        directUsable = false; // refused at the first read: through the page cache from here
        await this.#settle();
        this.#mode = 'cached';
        this.#expect = -1;
        return this.#lendAhead(position, want);
      }
    }
    this.#cached ??= Buffer.allocUnsafeSlow(CACHED_CHUNK);
    const view = this.#cached.subarray(0, Math.min(CACHED_CHUNK, want));
    const n = await this.read(view, position);
    if (n === 0) throw new Error(`short read at byte ${position} of ${this.digest}`);
    return view.subarray(0, n);
  }

  /**
   * Picks the page cache or direct reads for this pull (file header), once. A pull of at least
   * `DIRECT_MIN_BYTES` reads ahead into pool buffers either way (through the page cache, reads
   * in flight beside the socket send cost less and wait less than one read at a time); without
   * pool buffers it reads one chunk at a time through the cache.
   */
  #decide(want: number): void {
    const cached = this.#heat!.begin(this.digest);
    this.#mode = 'cached';
    if (want < DIRECT_MIN_BYTES) return;
    const direct = !cached && directUsable;
    this.#buffers = pool.take(DIRECT_DEPTH, DIRECT_MIN_DEPTH, direct);
    this.#idle = [...this.#buffers];
    if (this.#buffers.length > 0 && direct) this.#mode = 'direct';
  }

  /** Lends from the reads ahead (direct or through the cache, by mode), starting them over on a jump. */
  async #lendAhead(position: number, want: number): Promise<Uint8Array> {
    if (position !== this.#expect) await this.#restart(position, want);
    if (this.#lent) {
      this.#idle.push(this.#lent);
      this.#lent = undefined;
    }
    this.#fill();
    const head = this.#ahead.shift();
    if (!head) throw new Error(`short read at byte ${position} of ${this.digest}`);
    let n: number;
    try {
      n = await head.done;
    } finally {
      this.#lent = head.buffer;
    }
    const from = position - head.at;
    if (n <= from) throw new Error(`short read at byte ${position} of ${this.digest}`);
    const view = head.buffer.subarray(from, Math.min(n, from + want));
    this.#expect = position + view.byteLength;
    this.#fill();
    return view;
  }

  /** Starts read-ahead over again at `position` (the first lend, or a jump). */
  async #restart(position: number, want: number): Promise<void> {
    await this.#settle();
    this.#next = position - (position % DIRECT_IO_ALIGN);
    this.#fd = this.#mode === 'direct' ? this.#directFd! : this.handle.fd;
    const end = Math.min(this.size, position + want);
    this.#stop = Math.ceil(end / DIRECT_IO_ALIGN) * DIRECT_IO_ALIGN;
  }

  /** Issues reads into idle buffers up to the stop offset. */
  #fill(): void {
    while (this.#idle.length > 0 && this.#next < this.#stop) {
      const buffer = this.#idle.pop()!;
      const at = this.#next;
      const len = Math.min(this.#mode === 'direct' ? DIRECT_CHUNK : cachedAheadChunk(pool.pulls), this.#stop - at);
      this.#next += len;
      const done = readAt(this.#fd, buffer, len, at);
      done.catch(() => {}); // awaited by lend or settle; never unhandled meanwhile
      this.#ahead.push({ at, buffer, done });
    }
  }

  /** Waits for every read in flight (their buffers must not be reused before) and idles them. */
  async #settle(): Promise<void> {
    const ahead = this.#ahead;
    this.#ahead = [];
    for (const a of ahead) {
      await a.done.catch(() => 0);
      this.#idle.push(a.buffer);
    }
    if (this.#lent) this.#idle.push(this.#lent);
    this.#lent = undefined;
  }

  /** Ends the reads ahead: waits for reads in flight, returns the buffers, closes the direct descriptor. */
  async #stopReadingAhead(): Promise<void> {
    await this.#settle();
    if (this.#buffers.length) pool.give(this.#buffers);
    this.#buffers = [];
    this.#idle = [];
    const fd = this.#directFd;
    this.#directFd = undefined;
    if (fd !== undefined) close(fd, () => {});
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#mode !== undefined) this.#heat!.end(this.digest);
    this.#heat = undefined;
    try {
      await this.#stopReadingAhead();
    } finally {
      await this.handle.close();
    }
  }
}

/** Opens `path` for direct reads. @throws EINVAL when the file system refuses `O_DIRECT`. */
function openDirect(path: string): Promise<number> {
  return new Promise((resolve, reject) => open(path, fsc.O_RDONLY | fsc.O_DIRECT, (e, fd) => (e ? reject(e) : resolve(fd))));
}
