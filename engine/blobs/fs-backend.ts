/**
 * The filesystem blob backend (contract.ts), in the data directory's layout:
 *
 *   `<data>/blobs/sha256/<2 hex>/<64 hex>`   committed blob, immutable (a hard link of its session file)
 *   `<data>/uploads/<id>`                    an upload session's bytes
 *   `<data>/blobs/gc-trash/<hex>.<pid>.<r>`  a blob being deleted by version (`delete(d, ifVersion)`)
 *
 * Commit order (each step only after the previous one): the bytes are written to
 * `uploads/<id>` and fdatasynced; the digest is verified (the running hash, or the file
 * re-hashed when the session was resumed after a restart); the file is hard-linked to its final
 * name — `link` fails when the name exists, so a committed blob is never replaced (dedupe); the
 * blob directory is fsynced; the session file is removed. The caller records the blob
 * afterwards. A crash at any step leaves either an unchanged session (re-hashed and
 * re-committed, or reaped) or a complete, verified blob.
 *
 * Delete by version: the blob is renamed into `gc-trash/` (atomic) and unlinked only if it is
 * still the inode the caller saw; another inode (a commit made meanwhile) is linked back at once.
 * `recover` settles the trash of a process that died in between.
 *
 * No path leaves this file: readers, writers, stat, delete and listings are the contract's.
 */
import { createReadStream, statSync } from 'node:fs';
import { promises as fsp, constants as fsc } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { fail } from '../errors.js';
import type { Digest } from '../digest.js';
import { blobKey, digestOfKey, isSessionId, type BlobBackend, type BlobReader, type BlobStat, type BlobWriter, type ByteRange, type CommitResult, type SessionInfo } from './contract.js';
import { checkSessionId, hashBytes, resolveRange, verifyDigest, DigestLocks } from './backend-common.js';
import { inlineHash, lostHash, type HashFactory, type RunningHash } from './running-hash.js';

/** Options of the filesystem backend. */
export interface FsBackendOptions {
  /** Running sha256 of new sessions (default: node:crypto on the calling thread). */
  newHash?: HashFactory;
  /** sha256 of a whole file, for sessions resumed without hash state (default: streamed here). */
  rehash?: (path: string) => Promise<Digest>;
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

function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function hashFile(path: string): Promise<Digest> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return `sha256:${h.digest('hex')}` as Digest;
}

/** Blob bytes in `<dataDir>/blobs` and `<dataDir>/uploads`. */
export class FsBlobBackend implements BlobBackend {
  readonly kind = 'fs';
  readonly #data: string;
  readonly #uploads: string;
  readonly #trash: string;
  readonly #locks = new DigestLocks();

  constructor(dataDir: string, readonly options: FsBackendOptions = {}) {
    this.#data = dataDir;
    this.#uploads = join(dataDir, 'uploads');
    this.#trash = join(dataDir, 'blobs', 'gc-trash');
  }

  #blobPath(digest: Digest): string {
    return join(this.#data, blobKey(digest));
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
      const r = resolveRange((await h.stat()).size, range);
      // The open handle keeps the bytes readable even if GC unlinks the name meanwhile.
      return h.createReadStream(r ? { start: r.start, end: r.end } : {});
    } catch (e) {
      await h.close();
      throw e;
    }
  }

  async open(digest: Digest): Promise<BlobReader> {
    const h = await this.#openBlob(digest);
    try {
      return new FsReader(digest, h, (await h.stat()).size);
    } catch (e) {
      await h.close();
      throw e;
    }
  }

  statSync(digest: Digest): BlobStat | undefined {
    const st = statSync(this.#blobPath(digest), { throwIfNoEntry: false });
    return st && statOf(digest, st);
  }

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

  async create(id: string): Promise<BlobWriter> {
    checkSessionId(id);
    await fsp.mkdir(this.#uploads, { recursive: true });
    let h: fsp.FileHandle;
    try {
      h = await fsp.open(this.#sessionPath(id), 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw fail('BLOB_UPLOAD_INVALID', `upload session ${id} already exists`);
      throw e;
    }
    return new FsWriter(this, id, this.#sessionPath(id), h, 0, (this.options.newHash ?? inlineHash)());
  }

  async resume(id: string): Promise<BlobWriter | undefined> {
    checkSessionId(id);
    let h: fsp.FileHandle;
    try {
      h = await fsp.open(this.#sessionPath(id), 'r+');
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
    const size = (await h.stat()).size;
    return new FsWriter(this, id, this.#sessionPath(id), h, size, lostHash());
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
   * Step 3–5 of the commit order for a fully synced, verified session file.
   * @internal used by FsWriter.
   */
  adoptSession(sessionPath: string, digest: Digest, size: number): Promise<CommitResult> {
    return this.#locks.with(digest, async () => {
      const target = this.#blobPath(digest);
      await fsp.mkdir(dirname(target), { recursive: true });
      let created = true;
      try {
        await fsp.link(sessionPath, target);
        await fsyncDir(dirname(target));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        created = false;
      }
      await fsp.rm(sessionPath, { force: true });
      return { digest, size, created };
    });
  }

  /** @internal */
  rehash(path: string): Promise<Digest> {
    return (this.options.rehash ?? hashFile)(path);
  }
}

/** A committed blob's open descriptor: positional reads into the caller's buffer. */
class FsReader implements BlobReader {
  #closed = false;

  constructor(readonly digest: Digest, readonly handle: fsp.FileHandle, readonly size: number) {}

  async read(into: Uint8Array, position: number): Promise<number> {
    let done = 0;
    while (done < into.byteLength) {
      const { bytesRead } = await this.handle.read(into, done, into.byteLength - done, position + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.handle.close();
  }
}

class FsWriter implements BlobWriter {
  #closed = false;

  constructor(
    readonly backend: FsBlobBackend,
    readonly id: string,
    readonly path: string,
    readonly handle: fsp.FileHandle,
    public size: number,
    readonly hash: RunningHash,
  ) {}

  #open(): void {
    if (this.#closed) throw fail('BLOB_UPLOAD_UNKNOWN', `upload session ${this.id} is closed`);
  }

  async append(bytes: Uint8Array): Promise<void> {
    this.#open();
    const at = this.size;
    const write = async () => {
      let done = 0;
      while (done < bytes.byteLength) {
        const { bytesWritten } = await this.handle.write(bytes, done, bytes.byteLength - done, at + done);
        done += bytesWritten;
      }
    };
    await Promise.all([write(), hashBytes(this.hash, bytes)]);
    this.size = at + bytes.byteLength;
  }

  async commit(expected: Digest): Promise<CommitResult> {
    this.#open();
    this.#closed = true;
    try {
      await this.handle.datasync();
    } finally {
      await this.handle.close();
    }
    const hex = await this.hash.digest();
    const actual = hex === null ? await this.backend.rehash(this.path) : (`sha256:${hex}` as Digest);
    try {
      verifyDigest(expected, actual);
    } catch (e) {
      await fsp.rm(this.path, { force: true });
      throw e;
    }
    return this.backend.adoptSession(this.path, actual, this.size);
  }

  async abort(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.hash.discard();
      await this.handle.close();
    }
    await fsp.rm(this.path, { force: true });
  }
}
