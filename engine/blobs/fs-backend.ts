/**
 * The filesystem blob backend (contract.ts), in the data directory's layout:
 *
 *   `<data>/blobs/sha256/<2 hex>/<64 hex>`   committed blob, immutable once in place
 *   `<data>/uploads/<id>`                    an upload session's bytes (created by its first write)
 *   `<data>/blobs/gc-trash/<hex>.<pid>.<r>`  a blob being deleted by version (`delete(d, ifVersion)`)
 *
 * Commit order (each step only after the previous one; fs-writer.ts does 1–3, `publish` 4–6):
 *   1. bytes: written to `uploads/<id>` (PATCHes, with background fdatasyncs between them);
 *   2. fdatasync of the session file, and its size checked against the bytes written;
 *   3. verify: the running sha256 (or the file re-hashed, when the session was resumed after a
 *      restart or the hash thread died) must equal the client's digest — a mismatch removes the
 *      session file and nothing else;
 *   4. rename `uploads/<id>` → `blobs/sha256/<2>/<hex>` — or, when the digest is already there
 *      with the same size and the caller's `reuse` agrees (the registry: its record exists),
 *      remove the session file instead (dedupe); rename replaces unrecorded bytes atomically;
 *   5. fsync of the blob's directory (the rename survives a crash);
 *   6. the caller records the blob (engine/blobs/uploads.ts, one metadata transaction).
 * A crash at any step leaves either a session file (re-hashed and committed after a restart, or
 * reaped) or a complete, verified blob (recorded by the retried commit, or GC's orphan sweep).
 * Commits of one digest are serialised within the process (one process owns a data directory).
 *
 * Delete by version: the blob is renamed into `gc-trash/` (atomic) and unlinked only if it is
 * still the inode the caller saw; another inode (a commit made meanwhile) is linked back at once.
 * `recover` settles the trash of a process that died in between.
 *
 * No path leaves this file and fs-writer.ts: readers, writers, stat, delete, listings and
 * copies (`copyTo`, hard links for backups) are the contract's or take a backend.
 */
import { promises as fsp, constants as fsc } from 'node:fs';
import { join, dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { fail } from '../errors.js';
import type { Digest } from '../digest.js';
import { blobKey, digestOfKey, isSessionId, type BlobBackend, type BlobReader, type BlobStat, type BlobWriter, type ByteRange, type CommitResult, type SessionInfo } from './contract.js';
import { checkSessionId, copyThrough, resolveRange, DigestLocks } from './backend-common.js';
import { FsWriter, type FsSessionHost } from './fs-writer.js';
import { stallGuard } from './stall-guard.js';
import { FsReader, PullHeat } from './fs-reader.js';
import type { BlobBackendSpec } from './backend-spec.js';
import { inlineHash, lostHash, type HashFactory } from './running-hash.js';

/** Largest read of a blob stream (`read`), bytes: the default chunk of Node's file streams. */
const READ_CHUNK = 64 * 1024;

/** Options of the filesystem backend. */
export interface FsBackendOptions {
  /**
   * Running sha256 of new sessions, also used to re-hash a session whose hash state was lost
   * (default: node:crypto on the calling thread; the server passes its hash thread).
   */
  newHash?: HashFactory;
}

function isMissing(e: unknown): boolean {
  return (e as NodeJS.ErrnoException).code === 'ENOENT';
}

async function fsyncDir(dir: string): Promise<void> {
  const h = await fsp.open(dir, fsc.O_RDONLY);
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

function statOf(digest: Digest, st: { size: number; ino: number; mtime: Date }): BlobStat {
  return { digest, size: st.size, version: String(st.ino), modifiedAt: st.mtime };
}

/** Puts a trash file back at `target` (hard link; an existing file there has the same bytes). */
async function restore(trash: string, target: string): Promise<void> {
  await fsp.mkdir(dirname(target), { recursive: true });
  await fsp.link(trash, target).catch((e: NodeJS.ErrnoException) => { if (e.code !== 'EEXIST') throw e; });
  await fsp.rm(trash, { force: true });
}

/** Hard link, or copy when linking is not possible (another file system, no permission). */
async function linkOrCopy(from: string, to: string): Promise<'linked' | 'copied'> {
  try {
    await fsp.link(from, to);
    return 'linked';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK' && code !== 'ENOTSUP') throw e;
    await fsp.copyFile(from, to, fsc.COPYFILE_EXCL);
    return 'copied';
  }
}

function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Blob bytes in `<dataDir>/blobs` and `<dataDir>/uploads`. */
export class FsBlobBackend implements BlobBackend {
  readonly kind = 'fs';
  readonly #data: string;
  /** `dataDir` normalized, ending in a separator: blob paths are this + `blobKey` (a clean relative key), no `join` per HEAD. */
  readonly #dataPrefix: string;
  readonly #uploads: string;
  readonly #trash: string;
  readonly #locks = new DigestLocks();
  /** Recent writes and pulls: which reads go through the page cache (fs-reader.ts). */
  readonly #heat = new PullHeat();
  /** Ids of this instance's open writers. */
  readonly #live = new Set<string>();
  readonly newHash: HashFactory;
  /** What this backend's session writers call back (fs-writer.ts); never handed out. */
  readonly #host: FsSessionHost;

  constructor(dataDir: string, options: FsBackendOptions = {}) {
    this.#data = dataDir;
    this.#dataPrefix = join(dataDir, '/');
    this.#uploads = join(dataDir, 'uploads');
    this.#trash = join(dataDir, 'blobs', 'gc-trash');
    this.newHash = options.newHash ?? inlineHash;
    this.#host = {
      newHash: this.newHash,
      publish: (sessionPath, digest, size, reuse) => this.#publish(sessionPath, digest, size, reuse),
      ended: (id) => this.#live.delete(id),
    };
  }

  /** What a worker thread needs to open the same backend (workers/inspect-image.ts). */
  get spec(): BlobBackendSpec {
    return { kind: 'fs', dataDir: this.#data };
  }

  #blobPath(digest: Digest): string {
    return this.#dataPrefix + blobKey(digest);
  }

  #sessionPath(id: string): string {
    return join(this.#uploads, id);
  }

  async stat(digest: Digest): Promise<BlobStat | undefined> {
    try {
      return statOf(digest, await fsp.stat(this.#blobPath(digest)));
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
  }

  /** Opens a committed blob's file for reading. @throws SlipwayError BLOB_UNKNOWN when absent. */
  async #openBlob(digest: Digest): Promise<fsp.FileHandle> {
    try {
      return await fsp.open(this.#blobPath(digest), 'r');
    } catch (e) {
      if (isMissing(e)) throw fail('BLOB_UNKNOWN', `blob unknown: ${digest}`, { digest });
      throw e;
    }
  }

  async read(digest: Digest, range?: ByteRange): Promise<Readable> {
    const h = await this.#openBlob(digest);
    try {
      const size = (await h.stat()).size;
      const { start, end } = resolveRange(size, range) ?? { start: 0, end: size - 1 };
      // The open handle keeps the bytes readable even if GC unlinks the name meanwhile. Reads of
      // at most READ_CHUNK, and of the bytes left when fewer: a 300-byte config costs one
      // 300-byte Buffer, not two of 64 KiB (a stream with no end allocates a full chunk for each
      // read, the one that meets end-of-file too). Those Buffers live until the thread's next
      // garbage collection, and inspection threads read every pushed config and layer.
      if (end < start) return h.createReadStream({ start: 0 });
      return h.createReadStream({ start, end, highWaterMark: Math.min(READ_CHUNK, end - start + 1) });
    } catch (e) {
      await h.close();
      throw e;
    }
  }

  async open(digest: Digest): Promise<BlobReader> {
    const h = await this.#openBlob(digest);
    try {
      return new FsReader(digest, h, (await h.stat()).size, this.#heat);
    } catch (e) {
      await h.close();
      throw e;
    }
  }

  /** Local: the registry checks a blob's size before serving it (contract.ts). */
  readonly statsLocally = true;

  /**
   * Without `ifVersion`, an unlink. With it: the file is renamed into `blobs/gc-trash/` (atomic),
   * then unlinked only if it is still that inode; another inode is a commit made meanwhile and is
   * linked back at once. A crash in between leaves a trash file for `recover`.
   */
  async delete(digest: Digest, ifVersion?: string): Promise<boolean> {
    const target = this.#blobPath(digest);
    if (ifVersion === undefined) {
      try {
        await fsp.unlink(target);
        return true;
      } catch (e) {
        if (isMissing(e)) return false;
        throw e;
      }
    }
    await fsp.mkdir(this.#trash, { recursive: true });
    const trash = join(this.#trash, `${digest.slice(7)}.${process.pid}.${Math.random().toString(36).slice(2, 10)}`);
    try {
      await fsp.rename(target, trash);
    } catch (e) {
      if (isMissing(e)) return false;
      throw e;
    }
    if (String((await fsp.stat(trash)).ino) !== ifVersion) {
      await restore(trash, target);
      return false;
    }
    await fsp.unlink(trash);
    return true;
  }

  /** Trash files of a process that died mid-delete (its pid is gone). */
  async recover(keep: (digest: Digest) => boolean | Promise<boolean>): Promise<void> {
    const names = await fsp.readdir(this.#trash).catch(() => [] as string[]);
    for (const name of names) {
      const m = /^([a-f0-9]{64})\.(\d+)\./.exec(name);
      if (!m || pidAlive(Number(m[2]))) continue;
      const digest = `sha256:${m[1]}` as Digest;
      const path = join(this.#trash, name);
      if ((await keep(digest)) && (await this.stat(digest)) === undefined) await restore(path, this.#blobPath(digest));
      else await fsp.rm(path, { force: true });
    }
  }

  async *list(): AsyncIterable<Digest> {
    const root = join(this.#data, 'blobs', 'sha256');
    let prefixes: string[];
    try {
      prefixes = await fsp.readdir(root);
    } catch (e) {
      if (isMissing(e)) return;
      throw e;
    }
    for (const p of prefixes) {
      let names: string[];
      try {
        names = await fsp.readdir(join(root, p));
      } catch (e) {
        if (isMissing(e) || (e as NodeJS.ErrnoException).code === 'ENOTDIR') continue;
        throw e;
      }
      for (const n of names) {
        const d = digestOfKey(`blobs/sha256/${p}/${n}`);
        if (d) yield d;
      }
    }
  }

  /** No I/O: the session file is created by the writer's first write, sync or commit. */
  async create(id: string): Promise<BlobWriter> {
    checkSessionId(id);
    if (this.#live.has(id)) throw fail('BLOB_UPLOAD_INVALID', `upload session ${id} already exists`);
    this.#live.add(id);
    return stallGuard(new FsWriter(this.#host, id, this.#sessionPath(id), false, 0, this.newHash()));
  }

  async resume(id: string, size?: number): Promise<BlobWriter | undefined> {
    checkSessionId(id);
    if (this.#live.has(id)) throw fail('BLOB_UPLOAD_INVALID', `upload session ${id} is open`);
    let h: fsp.FileHandle;
    try {
      h = await fsp.open(this.#sessionPath(id), 'r+');
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
    let stored: number;
    try {
      stored = (await h.stat()).size;
      if (size !== undefined && stored < size) return undefined;
      if (size !== undefined && stored > size) {
        await h.truncate(size);
        stored = size;
      }
    } finally {
      await h.close();
    }
    this.#live.add(id);
    return stallGuard(new FsWriter(this.#host, id, this.#sessionPath(id), true, stored, lostHash()));
  }

  async *sessions(): AsyncIterable<SessionInfo> {
    let names: string[];
    try {
      names = await fsp.readdir(this.#uploads);
    } catch (e) {
      if (isMissing(e)) return;
      throw e;
    }
    for (const id of names) {
      if (!isSessionId(id)) continue;
      try {
        yield { id, startedAt: (await fsp.stat(this.#sessionPath(id))).mtime };
      } catch (e) {
        if (!isMissing(e)) throw e;
      }
    }
  }

  async abortSession(id: string): Promise<void> {
    checkSessionId(id);
    await fsp.rm(this.#sessionPath(id), { force: true });
  }

  async presignedUrl(): Promise<string | undefined> {
    return undefined;
  }

  /**
   * Steps 4–5 of the commit order for a synced, verified session file: reuse a committed copy
   * of the same size when `reuse` agrees (the session file is removed), else rename the session
   * file into place (atomically replacing what is there) and fsync the directory.
   */
  #publish(sessionPath: string, digest: Digest, size: number, reuse: (existing: BlobStat) => boolean | Promise<boolean>): Promise<CommitResult> {
    return this.#locks.with(digest, async () => {
      const existing = await this.stat(digest);
      if (existing && existing.size === size && (await reuse(existing))) {
        await fsp.rm(sessionPath, { force: true });
        return { digest, size, created: false };
      }
      const target = this.#blobPath(digest);
      await fsp.mkdir(dirname(target), { recursive: true });
      await fsp.rename(sessionPath, target);
      await fsyncDir(dirname(target));
      this.#heat.written(digest); // its bytes are in the page cache (fs-writer.ts)
      return { digest, size, created: true };
    });
  }

  /**
   * Copies the committed blob `digest` into `target`: a hard link when `target` is a filesystem
   * backend on the same file system (blobs never change in place), else a copy (a file copy,
   * or streamed through `target`'s writer for another kind of backend). Returns what was done,
   * or 'missing' when this backend has no such blob. Backups and restores use it.
   */
  async copyTo(target: BlobBackend, digest: Digest): Promise<'linked' | 'copied' | 'missing'> {
    if (target instanceof FsBlobBackend) {
      const to = target.#blobPath(digest);
      await fsp.mkdir(dirname(to), { recursive: true });
      try {
        return await linkOrCopy(this.#blobPath(digest), to);
      } catch (e) {
        if (isMissing(e)) return 'missing';
        throw e;
      }
    }
    return (await copyThrough(this, target, digest)) ? 'copied' : 'missing';
  }
}
