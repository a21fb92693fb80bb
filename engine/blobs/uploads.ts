/**
 * Upload sessions (distribution spec "Pushing blobs"): POST opens one, PATCH appends at the
 * current offset, PUT `?digest=` finishes it, DELETE cancels it. Bytes go to `uploads/<id>`;
 * the running sha256 of each session is kept in memory so chunked uploads never re-read bytes.
 * After a restart that state is gone: the file is re-hashed in a worker at completion.
 *
 * A session is used by one request at a time; a second concurrent PATCH/PUT is refused.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp, openSync, constants as fsc } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../store.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import type { Digest } from '../digest.js';
import { SYNC_EVERY_BYTES, UploadWriter } from './writer.js';
import { inlineHash, lostHash, type HashFactory, type RunningHash } from './running-hash.js';
import { datasyncFile, type BlobStore } from './cas.js';
import type { UploadRecord } from './records.js';
import { linkBlobInTransaction } from '../registry/links.js';

/** Re-hashes a file off the event loop; returns its sha256 digest and size in bytes. */
export type FileHasher = (path: string) => Promise<{ digest: Digest; size: number }>;

interface LiveState {
  hash: RunningHash;
  offset: number;
  busy: boolean;
  /** Bytes appended since the session's last fdatasync began. */
  unsynced: number;
  /** A background fdatasync of the session file, started between chunks. */
  syncing: Promise<void> | null;
  /** The session's record while it is not in the store yet (no bytes recorded so far). */
  unrecorded?: UploadRecord;
}

function newLive(hash: RunningHash, offset: number): LiveState {
  return { hash, offset, busy: false, unsynced: 0, syncing: null };
}

/** Background fdatasync between chunks; errors are left to the final sync at commit. */
function syncInBackground(path: string): Promise<void> {
  // The session was cancelled meanwhile, or the commit's own sync will report the error.
  return datasyncFile(path).catch(() => {});
}

/** Options of the upload service. */
export interface UploadOptions {
  /** Sessions untouched for this long are reaped (ms). Distribution's default is 168 h; ours 24 h. */
  staleAfterMs: number;
  /** Running sha256 of new sessions (default: on the event loop; the server uses a hash thread). */
  newHash?: HashFactory;
}

export class Uploads {
  readonly dir: string;
  readonly #live = new Map<string, LiveState>();

  constructor(
    readonly store: Store,
    readonly blobs: BlobStore,
    readonly clock: Clock,
    readonly rehash: FileHasher,
    dataDir: string,
    readonly options: UploadOptions = { staleAfterMs: 24 * 3600_000 },
  ) {
    this.dir = join(dataDir, 'uploads');
  }

  /** Creates the uploads directory and reaps what a crash or timeout left behind. */
  async init(): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true });
    await this.#recover();
  }

  /** Path of a session's bytes. */
  pathOf(id: string): string {
    return join(this.dir, id);
  }

  /** Opens a session for `repository` on behalf of `accountId`. */
  async create(repository: string, accountId: string): Promise<UploadRecord> {
    const id = randomBytes(16).toString('hex');
    const now = this.clock.now();
    const rec: UploadRecord = { id, repository, accountId, offset: 0, createdAt: now, updatedAt: now };
    // Recorded in the store with its first bytes (finishAppend), and its file created then too
    // (beginAppend): a POST does no I/O, so it does not queue behind other uploads' writes and
    // syncs (measured under 16 concurrent uploads: POST p50 75-130 ms before). Until then the
    // session lives only here; a crash forgets it, as the client would after any lost session.
    const live = newLive((this.options.newHash ?? inlineHash)(), 0);
    live.unrecorded = rec;
    this.#live.set(id, live);
    return rec;
  }

  /**
   * Looks a session up.
   * @throws BLOB_UPLOAD_UNKNOWN when it does not exist or belongs to another repository.
   */
  get(id: string, repository: string): UploadRecord {
    const rec = /^[a-f0-9]{32}$/.test(id) ? (this.#live.get(id)?.unrecorded ?? this.store.uploads.get(id)) : undefined;
    if (!rec || rec.repository !== repository) throw fail('BLOB_UPLOAD_UNKNOWN', 'blob upload unknown to registry', { uuid: id.slice(0, 64) });
    return rec;
  }

  /**
   * Starts appending to a session at `start` bytes (the Content-Range start, or the current
   * offset when the client sent none). The caller streams the body into the returned writer
   * and then calls `finishAppend`.
   * @throws RANGE_INVALID when `start` is not the current offset (the client gets 416);
   *         BLOB_UPLOAD_INVALID when another request is writing to the session.
   */
  beginAppend(rec: UploadRecord, start: number | undefined): UploadWriter {
    if (start !== undefined && start !== rec.offset) {
      throw fail('RANGE_INVALID', `upload chunk must start at offset ${rec.offset}, not ${start}`, { offset: rec.offset });
    }
    let live = this.#live.get(rec.id);
    if (live?.busy) throw fail('BLOB_UPLOAD_INVALID', 'another request is writing to this upload session');
    if (!live || live.offset !== rec.offset) {
      // Hash state lost (restart) or out of step: continue without it; completion re-hashes.
      live?.hash.discard();
      live = newLive(lostHash(), -1);
      this.#live.set(rec.id, live);
    }
    live.busy = true;
    let fd: number;
    try {
      fd = openSync(this.pathOf(rec.id), fsc.O_WRONLY | (live.unrecorded ? fsc.O_CREAT : 0), 0o600);
    } catch (e) {
      live.busy = false;
      throw fail('BLOB_UPLOAD_UNKNOWN', 'upload session bytes are missing; start a new upload', { uuid: rec.id });
    }
    return new UploadWriter(fd, rec.offset, live.hash);
  }

  /**
   * Ends an append: waits for the bytes, records the new offset. When `ok` is false (client
   * aborted, write failed) the session is dropped entirely: its bytes can no longer be trusted.
   */
  async finishAppend(rec: UploadRecord, writer: UploadWriter, ok: boolean): Promise<UploadRecord> {
    const live = this.#live.get(rec.id);
    try {
      await writer.end();
    } catch (e) {
      ok = false;
    }
    if (!ok) {
      await this.cancel(rec);
      throw fail('BLOB_UPLOAD_INVALID', 'upload interrupted; the session was discarded, start a new upload');
    }
    const updated: UploadRecord = { ...rec, offset: writer.offset, updatedAt: this.clock.now() };
    // Recorded before the reply, also when the same request commits next: GC keeps every blob
    // and orphan file whose size equals a recorded session offset (engine/registry/gc.ts), which
    // is what protects bytes between the commit's dedupe check or rename and its transaction.
    await this.store.uploads.put(rec.id, updated);
    if (live) {
      live.busy = false;
      live.unrecorded = undefined;
      if (live.offset !== -1) live.offset = updated.offset;
      // Chunked uploads: sync every SYNC_EVERY_BYTES in the background, overlapping the next
      // chunk, so the commit's final sync has little left (the writer syncs within one chunk).
      live.unsynced += writer.unsyncedBytes;
      if (live.unsynced >= SYNC_EVERY_BYTES && !live.syncing) {
        live.unsynced = 0;
        const syncing = syncInBackground(this.pathOf(rec.id));
        live.syncing = syncing;
        void syncing.then(() => { if (live.syncing === syncing) live.syncing = null; });
      }
    }
    return updated;
  }

  /**
   * Completes a session: fsyncs the bytes, verifies them against `expected`, moves them into
   * the blob store and, in one transaction, records the blob, links it to the repository and
   * deletes the session.
   * @throws DIGEST_INVALID (session discarded, nothing stored) when the bytes do not match.
   */
  async commit(rec: UploadRecord, expected: Digest): Promise<{ digest: Digest; size: number }> {
    const path = this.pathOf(rec.id);
    const live = this.#live.get(rec.id);
    if (live?.unrecorded) {
      // Completed without a body: create its (empty) file, and record the session before the
      // bytes move (GC keeps blobs of a recorded session's size, gc.ts).
      await fsp.writeFile(path, new Uint8Array(0), { flag: 'a' });
      await this.store.uploads.put(rec.id, rec);
      live.unrecorded = undefined;
    }
    if (live?.syncing) await live.syncing;
    await datasyncFile(path);
    let hex: string | null = null;
    if (live && live.offset === rec.offset) hex = await live.hash.digest();
    else live?.hash.discard();
    this.#live.delete(rec.id);
    const actual = hex ? (`sha256:${hex}` as Digest) : (await this.rehash(path)).digest;
    if (actual !== expected) {
      await this.cancel(rec);
      throw fail('DIGEST_INVALID', `provided digest ${expected} does not match uploaded content (${actual}); nothing was stored`, { expected, actual });
    }
    await this.blobs.adopt(path, expected);
    const now = this.clock.now();
    await this.store.env.transaction(() => {
      if (!this.store.blobs.get(expected)) {
        this.store.blobs.put(expected, { size: rec.offset, createdAt: now, refs: 0 });
      }
      linkBlobInTransaction(this.store, rec.repository, expected, now);
      this.store.uploads.remove(rec.id);
    });
    return { digest: expected, size: rec.offset };
  }

  /** Cancels a session: record first, then bytes (never a record without its file). */
  async cancel(rec: UploadRecord): Promise<void> {
    this.#live.get(rec.id)?.hash.discard();
    this.#live.delete(rec.id);
    await this.store.uploads.remove(rec.id);
    await fsp.rm(this.pathOf(rec.id), { force: true });
  }

  /**
   * Removes sessions idle for longer than `staleAfterMs` and not in use. Safe while serving.
   * Returns the number of sessions removed.
   */
  async reap(): Promise<number> {
    const now = this.clock.now();
    let removed = 0;
    const unrecorded = [...this.#live.values()].flatMap((l) => (l.unrecorded ? [l.unrecorded] : []));
    for (const rec of [...unrecorded, ...[...this.store.uploads.getRange()].map((e) => e.value)]) {
      if (now - rec.updatedAt > this.options.staleAfterMs && !this.#live.get(rec.id)?.busy) {
        await this.cancel(rec);
        removed++;
      }
    }
    return removed;
  }

  /**
   * Start-up recovery, before any request is served: deletes session files without a record
   * (crash between file and record), drops sessions whose acknowledged bytes did not reach the
   * disk, truncates bytes past the acknowledged offset, then reaps stale sessions.
   */
  async #recover(): Promise<void> {
    for (const name of await fsp.readdir(this.dir)) {
      if (!this.store.uploads.get(name)) await fsp.rm(join(this.dir, name), { force: true, recursive: true });
    }
    for (const { value: rec } of this.store.uploads.getRange()) {
      const size = await fsp.stat(this.pathOf(rec.id)).then((s) => s.size, () => -1);
      if (size < rec.offset) await this.cancel(rec);
      else if (size > rec.offset) await fsp.truncate(this.pathOf(rec.id), rec.offset);
    }
    await this.reap();
  }
}
