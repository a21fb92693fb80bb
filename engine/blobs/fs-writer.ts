/**
 * The filesystem backend's upload session writer (fs-backend.ts documents the layout and the
 * commit order). One writer serves a session for its whole life: it holds the session file's
 * descriptor while operations run and closes it once suspended and idle for `CLOSE_IDLE_MS`,
 * so a session waiting between PATCHes costs no descriptor, while a chunked upload's next PATCH
 * (usually within milliseconds) finds it open: reopening descriptors on every PATCH (`open` and
 * `close`) was part of what a 16 MiB PATCH cost beyond its bytes. The next write after a close
 * reopens it, on libuv's pool: an `open` on the event loop would stop the whole process while
 * the disk hangs (docs/faults.md "A data disk that hangs"). The file is created by
 * the first write, sync or commit (`O_EXCL`), so opening a session does no I/O.
 *
 * Writes are positional `writev` calls at the current end (short writes continue from where
 * they stopped); the running sha256 is fed separately (`feedHash`), so the caller may hash on
 * another thread while the same buffers are written. `sync` (fdatasync) may run beside writes.
 *
 * Writes go through the page cache, so a blob pulled right after its push (the usual order:
 * CI pushes, then every dyno pulls) is served from memory (docs/storage.md "Pushed bytes go
 * through the page cache"). Durability does not depend on it: the upload writer starts an `fdatasync` every
 * `SYNC_EVERY_BYTES` in the background (writer.ts), so the dirty bytes of a long push go to the
 * disk while it runs, and the commit's own `fdatasync` (step 2 of the commit order, fs-backend.ts)
 * comes before the blob is published or acknowledged. Linux reports a writeback error (EIO,
 * ENOSPC) to one `fdatasync` of a descriptor, so the first failed sync is remembered and fails the
 * commit even when a later sync succeeds. (Until 2026-11-26 aligned runs were written
 * with `O_DIRECT`, which saved the kernel's copy into the cache, 0.4–1.9 CPU-s per GiB here, but
 * sent every first pull to the disk at half the reference's pace.)
 */
import { close, fdatasync, fstat, ftruncate, open, read, writev, constants as fsc, promises as fsp } from 'node:fs';
import { dirname } from 'node:path';
import { fail } from '../errors.js';
import type { Digest } from '../digest.js';
import type { BlobStat, BlobWriter, CommitOptions, CommitResult } from './contract.js';
import { appendHashed, verifyDigest } from './backend-common.js';
import { hashPositional } from './hash-blob.js';
import { lostHash, type HashFactory, type RunningHash } from './running-hash.js';
import { asStorageFull } from '../storage/storage-full.js';

/** What a session writer needs from its backend. */
export interface FsSessionHost {
  /** Running hashes for re-hashing a session whose hash state was lost. */
  readonly newHash: HashFactory;
  /** Steps 4–6 of the commit order for a synced, verified session file (fs-backend.ts). */
  publish(sessionPath: string, digest: Digest, size: number, reuse: (existing: BlobStat) => boolean | Promise<boolean>): Promise<CommitResult>;
  /** The writer of `id` ended (committed or aborted): the id may be used again. */
  ended(id: string): void;
}

const reuseAlways = () => true;

/** A suspended, idle writer closes its descriptor after this long (ms). */
export const CLOSE_IDLE_MS = 1000;

function writevAt(fd: number, chunks: readonly Uint8Array[], position: number): Promise<number> {
  return new Promise((resolve, reject) => writev(fd, chunks as Uint8Array[], position, (e, n) => (e ? reject(e) : resolve(n))));
}

/**
 * Opens `path` on libuv's pool: never on the event loop, where an open on a disk that hangs
 * would stop the whole process (docs/faults.md "A data disk that hangs").
 */
function openFile(path: string, flags: number, mode?: number): Promise<number> {
  return new Promise((resolve, reject) => open(path, flags, mode, (e, fd) => (e ? reject(e) : resolve(fd))));
}

function datasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fdatasync(fd, (e) => (e ? reject(e) : resolve())));
}

function sizeOf(fd: number): Promise<number> {
  return new Promise((resolve, reject) => fstat(fd, (e, st) => (e ? reject(e) : resolve(st.size))));
}

function truncateTo(fd: number, size: number): Promise<void> {
  return new Promise((resolve, reject) => ftruncate(fd, size, (e) => (e ? reject(e) : resolve())));
}

/** What a failed write of session bytes could not store, for STORAGE_FULL's message. */
const SESSION_BYTES = "the upload's bytes";

function readAt(fd: number, into: Uint8Array, position: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, into, 0, into.byteLength, position, (e, n) => (e ? reject(e) : resolve(n))));
}

/** `chunks` without their first `skip` bytes (the rest of a short write). */
function rest(chunks: readonly Uint8Array[], skip: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const c of chunks) {
    if (skip >= c.byteLength) {
      skip -= c.byteLength;
      continue;
    }
    out.push(skip > 0 ? c.subarray(skip) : c);
    skip = 0;
  }
  return out;
}

/** One upload session's file: lazily opened, closed when suspended and idle. */
export class FsWriter implements BlobWriter {
  #fd: number | null = null;
  /** Operations holding the descriptor now. */
  #users = 0;
  /** The open in progress, shared by the operations that wait for it. */
  #opening: Promise<void> | null = null;
  #suspended = false;
  #closed = false;
  #exists: boolean;
  /** Bytes fed to the running hash. */
  #hashed = 0;
  /** The session's running sha256 (given up by `rewind`: the commit then re-hashes the file). */
  #hash: RunningHash;
  #idle: Array<() => void> = [];
  /**
   * The first failed `sync` (a background one's error is not reported to its caller): the
   * kernel reports a writeback error to one `fdatasync` per descriptor only, so the commit's own
   * sync may succeed after the bytes were lost; the commit fails with this instead.
   */
  #syncError: unknown = undefined;
  /** The pending close of a suspended, idle writer's descriptor. */
  #closeTimer: NodeJS.Timeout | null = null;

  /**
   * @param exists whether the session file exists (resumed) or is created by the first use
   * @param size bytes already in the file (resumed sessions; their hash state is lost)
   */
  constructor(readonly host: FsSessionHost, readonly id: string, readonly path: string, exists: boolean, public size: number, hash: RunningHash) {
    this.#exists = exists;
    this.#hash = hash;
  }

  #check(): void {
    if (this.#closed) throw fail('BLOB_UPLOAD_UNKNOWN', `upload session ${this.id} is closed`);
  }

  /**
   * The descriptor for one operation (opened, and the file created, when needed).
   * @throws STORAGE_FULL when the file cannot be created for want of space.
   */
  async #acquire(): Promise<number> {
    this.#check();
    this.#suspended = false;
    this.#cancelClose();
    this.#users++;
    try {
      while (this.#fd === null) await (this.#opening ??= this.#open().finally(() => { this.#opening = null; }));
    } catch (e) {
      this.#release();
      throw await asStorageFull(e, SESSION_BYTES, dirname(this.path));
    }
    return this.#fd;
  }

  async #open(): Promise<void> {
    const flags = fsc.O_RDWR | (this.#exists ? 0 : fsc.O_CREAT | fsc.O_EXCL);
    for (let attempt = 0; ; attempt++) {
      try {
        this.#fd = await openFile(this.path, flags, 0o600);
        this.#exists = true;
        return;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' && !this.#exists && attempt === 0) {
          await fsp.mkdir(dirname(this.path), { recursive: true });
          continue;
        }
        if (code === 'ENOENT') throw fail('BLOB_UPLOAD_UNKNOWN', 'upload session bytes are missing; start a new upload', { uuid: this.id });
        if (code === 'EEXIST') throw fail('BLOB_UPLOAD_INVALID', `upload session ${this.id} already exists`);
        throw e;
      }
    }
  }

  #release(): void {
    if (--this.#users > 0) return;
    if (this.#closed) this.#closeFd();
    else if (this.#suspended) this.#closeLater();
    for (const w of this.#idle.splice(0)) w();
  }

  /** Closes the descriptor after `CLOSE_IDLE_MS` unless an operation takes it first. */
  #closeLater(): void {
    if (this.#closeTimer || this.#fd === null) return;
    this.#closeTimer = setTimeout(() => {
      this.#closeTimer = null;
      if (this.#users === 0 && this.#suspended) this.#closeFd();
    }, CLOSE_IDLE_MS);
    this.#closeTimer.unref();
  }

  #cancelClose(): void {
    if (this.#closeTimer) clearTimeout(this.#closeTimer);
    this.#closeTimer = null;
  }

  #closeFd(): void {
    this.#cancelClose();
    const fd = this.#fd;
    this.#fd = null;
    if (fd !== null) close(fd, () => {});
  }

  /** Resolves once no operation holds the descriptor. */
  #whenIdle(): Promise<void> {
    return this.#users === 0 ? Promise.resolve() : new Promise((resolve) => this.#idle.push(resolve));
  }

  feedHash(bytes: Buffer, done: () => void): void {
    this.#check();
    this.#hashed += bytes.length;
    this.#hash.update(bytes, done);
  }

  async write(chunks: readonly Uint8Array[]): Promise<void> {
    const fd = await this.#acquire();
    try {
      await this.#writeAll(fd, chunks, chunks.reduce((n, c) => n + c.byteLength, 0));
    } catch (e) {
      throw await asStorageFull(e, SESSION_BYTES, dirname(this.path));
    } finally {
      this.#release();
    }
  }

  /** Writes every byte of `chunks` at the end through `fd` (short writes continue). */
  async #writeAll(fd: number, chunks: readonly Uint8Array[], bytes: number): Promise<void> {
    let left = bytes;
    let at = this.size;
    let pending = chunks;
    while (left > 0) {
      const n = await writevAt(fd, pending, at);
      // A write that takes nothing would loop for ever: only a full medium does that.
      if (n === 0) throw Object.assign(new Error('the write took no bytes'), { code: 'ENOSPC' });
      at += n;
      left -= n;
      this.size = at;
      if (left > 0) pending = rest(pending, n);
    }
  }

  append(bytes: Uint8Array): Promise<void> {
    return appendHashed(this, bytes);
  }

  async sync(): Promise<void> {
    const fd = await this.#acquire();
    try {
      await datasync(fd);
    } catch (e) {
      this.#syncError ??= e;
      throw await asStorageFull(e, SESSION_BYTES, dirname(this.path));
    } finally {
      this.#release();
    }
  }

  /**
   * Cuts the session back to `size` bytes (its acknowledged offset) after a failed append: the
   * file is truncated (which needs no space) and the running hash is given up, so the commit
   * re-hashes the file. The session stays open for the client to resume from `size`.
   * @throws the truncate's error (the caller then discards the session).
   */
  async rewind(size: number): Promise<void> {
    if (size === 0) {
      // Back to a new session: no file (the next write creates it) and a fresh running hash.
      this.#check();
      await this.#whenIdle();
      this.#closeFd();
      await fsp.rm(this.path, { force: true });
      this.#exists = false;
      this.size = 0;
      this.#hash.discard();
      this.#hash = this.host.newHash();
      this.#hashed = 0;
      return;
    }
    const fd = await this.#acquire();
    try {
      await truncateTo(fd, size);
      this.size = size;
      this.#hash.discard();
      this.#hash = lostHash();
      this.#hashed = 0;
    } finally {
      this.#release();
    }
  }

  suspend(): void {
    if (this.#closed) return;
    this.#suspended = true;
    if (this.#users === 0) this.#closeLater();
  }

  /**
   * Steps 1–3 of the commit order (fs-backend.ts): fdatasync, the file's size against the bytes
   * written, the digest (running hash, or the file re-hashed); then the backend publishes.
   */
  async commit(expected: Digest, options: CommitOptions = {}): Promise<CommitResult> {
    const fd = await this.#acquire();
    this.#closed = true;
    let actual: Digest;
    try {
      await datasync(fd);
      if (this.#syncError !== undefined) throw this.#syncError;
      const stored = await sizeOf(fd);
      if (stored !== this.size) {
        throw fail('BLOB_UPLOAD_INVALID', `upload session bytes disagree (file ${stored}, written ${this.size} bytes); the session was discarded, start a new upload`);
      }
      const hex = this.#hashed === this.size ? await this.#hash.digest() : (this.#hash.discard(), null);
      actual = hex !== null
        ? (`sha256:${hex}` as Digest)
        : (await hashPositional({ size: this.size, read: (into, position) => readAt(fd, into, position) }, this.host.newHash)).digest;
      verifyDigest(expected, actual);
    } catch (e) {
      this.#release();
      await this.#discard();
      throw await asStorageFull(e, SESSION_BYTES, dirname(this.path));
    }
    this.#release();
    await this.#whenIdle();
    try {
      return await this.host.publish(this.path, actual, this.size, options.reuse ?? reuseAlways);
    } catch (e) {
      throw await asStorageFull(e, 'the blob', dirname(this.path));
    } finally {
      this.host.ended(this.id);
    }
  }

  async #discard(): Promise<void> {
    this.#closed = true;
    this.#hash.discard();
    await this.#whenIdle();
    this.#closeFd();
    await fsp.rm(this.path, { force: true });
    this.host.ended(this.id);
  }

  async abort(): Promise<void> {
    await this.#discard();
  }
}
