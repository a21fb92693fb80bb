/**
 * Upload sessions (distribution spec "Pushing blobs"): POST opens one, PATCH appends at the
 * current offset, PUT `?digest=` finishes it, DELETE cancels it. Bytes go through the blob
 * contract (contract.ts): each open session holds one `BlobWriter` of the backend (filesystem or
 * S3), suspended between requests, which keeps the session's running sha256 so chunked uploads
 * never re-read bytes. After a restart the backend resumes the session when it can (the
 * filesystem) and its commit re-hashes the bytes; otherwise the session is dropped and the
 * client starts again.
 *
 * One owner at a time (`claim`): a PATCH, a PUT (from its body through its commit), a DELETE or
 * the reaper holds the session exclusively, and a concurrent operation is refused with
 * UPLOAD_BUSY (409) instead of writing beside it. A completed or cancelled session ends for good:
 * its id is remembered (a tombstone) and nothing writes its record again.
 *
 * Nodes: a session belongs to the node that opened it (`UploadOptions.node`, in its record and
 * S3 key); nodes sharing the stores load, recover and reap only their own (and records without a
 * node, of older builds); the other nodes' sessions are peer-sessions.ts's.
 *
 * Records: a session is recorded in keyspace `uploads` (engine/storage/metadata.ts) with its
 * first bytes, and rewritten with each acknowledged offset. This node is the only writer of
 * its sessions, so it also keeps the open sessions' records in memory (loaded at start-up) and
 * answers lookups (and the open-session count of the metrics) from there: a PATCH costs one
 * write and no read. The stored records are what survives a restart, and what GC reads
 * (blobs/refs.ts `uploadSessionSizes`).
 */
import { isStalled } from '../storage/disk-deadline.js';
import { randomBytes } from 'node:crypto';
import type { MetadataStore, MetadataTransaction } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { discardedByOutage, discardedByStall, discardedForSpace, isStorageFull, storeAway, unknownSession } from './upload-errors.js';
import { UploadSessions } from './upload-sessions.js';
import { SessionEndings } from './upload-endings.js';
import type { Digest } from '../digest.js';
import { UploadWriter } from './writer.js';
import { MIN_BUFFER_BYTES, unlimitedMemory, type UploadMemory } from './upload-memory.js';
import type { BodyLanes } from './body-lanes.js';
import type { BlobBackend, BlobWriter } from './contract.js';
import type { UploadRecord } from './records.js';
import { newLive, type Lease, type LiveState } from './session-book.js';

export type { Lease } from './session-book.js';
export { DEFAULT_SESSIONS_PER_ACCOUNT, type UploadOptions } from './upload-options.js';
import { linkBlobInTransaction } from '../registry/links.js';
import { uploads as uploadRecords } from './keyspaces.js';
import { blobRecord, recordVerifiedBlobInTransaction } from './refs.js';
import { PeerSessions } from './peer-sessions.js';
import { DEFAULT_SESSIONS_PER_ACCOUNT, type UploadOptions } from './upload-options.js';
import { reapOrphanBytes, reapStale } from './upload-reaping.js';

/**
 * Bytes of a chunked upload's PATCHes between background fdatasync calls (within one PATCH body
 * the writer syncs every SYNC_EVERY_BYTES, writer.ts). Small enough that the sync ends while the
 * next 16 MiB PATCH streams: the disk takes queued writes in order, so the next PATCH's session
 * record (an LMDB commit and its sync) waits for the data sync ahead of it. At 64 MiB every fourth
 * 16 MiB PATCH waited 100–130 ms for it on the development disk, against ~1 ms otherwise
 * (bench/README.md, "Chunked pushes and the disk's queue").
 */
const CHUNKED_SYNC_BYTES = 16 * 1024 * 1024;

/**
 * Starts an fdatasync of a live session's bytes in the background, as `live.syncing` (which the
 * commit awaits). Its error is left to the commit's own sync (FsWriter remembers a failed one),
 * or the session was cancelled meanwhile.
 */
function syncInBackground(live: LiveState, blob: BlobWriter): void {
  live.unsynced = 0;
  const syncing = blob.sync().catch(() => {});
  live.syncing = syncing;
  void syncing.then(() => { if (live.syncing === syncing) live.syncing = null; });
}

/** The upload sessions of one server (see the file header). */
export class Uploads {
  readonly memory: UploadMemory;
  /** The body lanes (`UploadOptions.lanes`), when the server has them. */
  readonly lanes: BodyLanes | undefined;
  /** The open sessions, their leases and the tombstones of ended ones. */
  readonly #sessions = new UploadSessions();
  /** How sessions end: cancelled, or after a failure (upload-endings.ts). */
  readonly #endings: SessionEndings;
  readonly #writerLeases = new WeakMap<UploadWriter, Lease>();
  /** The other nodes' sessions: counted for the per-account limit, reaped (by the lock holder) when long dead. */
  readonly peers: PeerSessions;
  /** This node's name (`UploadOptions.node`). */
  readonly node: string;

  /**
   * @param store the metadata store's owner (the server's `Store`; only its `metadata` is used).
   * @param blobs the blob backend holding session bytes and committed blobs (filesystem or S3;
   *   its hash factory computes the sessions' running sha256).
   */
  constructor(
    readonly store: { readonly metadata: MetadataStore },
    readonly blobs: BlobBackend,
    readonly clock: Clock,
    readonly options: UploadOptions = { staleAfterMs: 24 * 3600_000 },
  ) {
    this.memory = options.memory ?? unlimitedMemory();
    this.lanes = options.lanes;
    this.#endings = new SessionEndings(this.#sessions, store, blobs);
    this.node = options.node ?? '';
    this.peers = new PeerSessions(store.metadata, blobs, clock, this.node, options.peerStaleAfterMs ?? 2 * options.staleAfterMs);
  }

  /**
   * Start-up, before any request is served: loads the recorded sessions, resumes their writers
   * and reaps what a crash or timeout left behind (`#recover`).
   */
  async init(): Promise<void> {
    await this.load();
    await this.#recover();
  }

  /**
   * Loads this node's recorded sessions (every node's with `allNodes`: fsck --repair) without
   * touching their bytes (no writer), and counts the other nodes' (`peers`): enough for `reap`
   * from a tool running beside a server. A server calls `init` instead.
   */
  async load(opts: { allNodes?: boolean } = {}): Promise<void> {
    for (const rec of await this.peers.refresh()) {
      if (!opts.allNodes && this.peers.isPeers(rec)) continue;
      this.#sessions.recorded.set(rec.id, rec);
      this.#sessions.live.set(rec.id, newLive(undefined));
      this.#sessions.book.opened(rec);
    }
  }

  /** Open sessions with at least one acknowledged chunk (recorded), from memory: the metrics' gauge. */
  get recordedSessions(): number {
    return this.#sessions.recorded.size;
  }

  /** Writes a session's record (one transaction with no reads), then its in-memory copy. */
  async #record(rec: UploadRecord): Promise<void> {
    await this.store.metadata.transact((tx) => tx.put(uploadRecords, rec.id, rec));
    // A session that ended while the write was in flight stays ended.
    if (!this.#sessions.book.hasEnded(rec.id)) this.#sessions.recorded.set(rec.id, rec);
  }

  /** Open sessions of an account: this node's, plus other nodes' recorded ones as of the last reaper round. */
  openSessions(accountId: string): number {
    return this.#sessions.book.openSessions(accountId) + this.peers.count(accountId);
  }

  /**
   * Opens a session for `repository` on behalf of `accountId`.
   * @throws RATE_LIMITED when the account already has `maxSessionsPerAccount` open sessions.
   */
  async create(repository: string, accountId: string, appId?: string): Promise<UploadRecord> {
    const limit = this.options.maxSessionsPerAccount ?? DEFAULT_SESSIONS_PER_ACCOUNT;
    if (this.openSessions(accountId) >= limit) {
      throw fail('RATE_LIMITED', `this account has ${limit} upload sessions in progress, the most allowed; complete or cancel (DELETE) one before starting another`, { limit });
    }
    const id = randomBytes(16).toString('hex');
    const now = this.clock.now();
    const rec: UploadRecord = { id, ...(this.node ? { node: this.node } : {}), repository, accountId, ...(appId !== undefined ? { appId } : {}), offset: 0, createdAt: now, updatedAt: now };
    // Recorded in the store with its first bytes (finishAppend), and the backend's session
    // created then too (the writer's first write): a POST does no I/O, so it does not queue
    // behind other uploads' writes and syncs (measured under 16 concurrent uploads: POST p50
    // 75-130 ms before). Until then the session lives only here; a crash forgets it, as the
    // client would after any lost session.
    const live = newLive(await this.blobs.create(id, this.memory));
    live.unrecorded = rec;
    this.#sessions.live.set(id, live);
    this.#sessions.book.opened(rec);
    return rec;
  }

  /**
   * Looks a session up (UploadSessions.get).
   * @throws BLOB_UPLOAD_UNKNOWN when it does not exist, ended, or belongs to another repository.
   */
  get(id: string, repository: string): UploadRecord {
    return this.#sessions.get(id, repository);
  }

  /**
   * Takes the session for one operation (UploadSessions.claim): every write to a session happens
   * under its one lease. @throws BLOB_UPLOAD_UNKNOWN when it ended; UPLOAD_BUSY when held.
   */
  claim(rec: UploadRecord, op: string): Lease {
    return this.#sessions.claim(rec, op);
  }

  /** Gives a lease back (no effect when already released or the session ended). */
  release(lease: Lease): void {
    this.#sessions.release(lease);
  }

  /**
   * Starts appending to a session at `start` bytes (the Content-Range start, or the current
   * offset when the client sent none). The caller streams the body into the returned writer
   * and then calls `finishAppend`. Without `lease`, the session is claimed until finishAppend.
   * `commitNext`: the same request commits the session right after this body, so the writer
   * syncs in the background every `COMMITTING_SYNC_EVERY_BYTES` (writer.ts says why).
   * @throws CHUNK_RANGE_MISMATCH when `start` is not the current offset (the client gets 416);
   *         UPLOAD_BUSY when another request holds the session; UNAVAILABLE (503) when the
   *         upload buffer memory is spent.
   */
  beginAppend(rec: UploadRecord, start: number | undefined, lease?: Lease, commitNext = false): UploadWriter {
    if (start !== undefined && start !== rec.offset) {
      throw fail('CHUNK_RANGE_MISMATCH', `upload chunk must start at offset ${rec.offset}, not ${start}`, { offset: rec.offset });
    }
    if (!this.memory.canTake(MIN_BUFFER_BYTES)) {
      throw fail('UNAVAILABLE', 'the registry is receiving as many upload bytes as it can buffer; retry shortly', { retryAfter: 2 });
    }
    const own = this.#sessions.lease(rec, lease, 'PATCH');
    const blob = this.#sessions.live.get(rec.id)!.writer;
    if (!blob || blob.size !== rec.offset) {
      // Not reachable in a server (init resumed every session; a failed append ends it).
      this.#sessions.done(own);
      throw fail('BLOB_UPLOAD_UNKNOWN', 'upload session bytes are missing; start a new upload', { uuid: rec.id });
    }
    if (blob.reserve && !blob.reserve()) {
      this.#sessions.done(own);
      throw fail('UNAVAILABLE', 'the registry is buffering as many upload bytes as it can; retry shortly', { retryAfter: 2 });
    }
    const writer = new UploadWriter(blob, this.memory, commitNext, this.lanes);
    this.#writerLeases.set(writer, own);
    return writer;
  }

  /**
   * Ends an append: waits for the bytes, records the new offset (the bytes accepted, which the
   * writer checked are exactly the bytes hashed and written). With `keep` false (client aborted,
   * write failed) the session is dropped entirely. With `keep` "received" (the server cut a too
   * slow body off) every byte accepted so far is flushed and kept, and the session stays open at
   * that offset, so the client can resume; when even that fails it is dropped.
   *
   * Storage full (a write of the bytes or of the record failed with STORAGE_FULL): the session
   * is cut back to its acknowledged offset `rec.offset` and stays open when the backend can
   * (`BlobWriter.rewind`: the filesystem), else it is discarded; the STORAGE_FULL error says
   * which (docs/faults.md "A full data disk"). The blob store away (BLOB_STORE_UNAVAILABLE):
   * the session is discarded and the error says so (docs/faults.md "The object store (S3) goes
   * away").
   * @param cause why the body ended early, when it did (the error the body's reading threw)
   * @param commitNext the same request commits the session next (`commit`): the bytes' fdatasync
   *   starts now, beside the record's commit, instead of after it in the commit. Both syncs wait in
   *   the disk's queue; with 16 pushes of 16 MiB at once the record's took 84 ms at p50 and the
   *   bytes' 42 ms, one after the other (bench/README.md, "Concurrent pushes: where the time goes").
   * @throws BLOB_STORE_UNAVAILABLE (session dropped, and said so) when the blob store failed to
   *   take the bytes; BLOB_UPLOAD_INVALID when the session was dropped for another reason;
   *   BLOB_UPLOAD_UNKNOWN when it ended; STORAGE_FULL when the storage is full.
   */
  async finishAppend(rec: UploadRecord, writer: UploadWriter, keep: boolean | 'received', cause?: unknown, commitNext = false): Promise<UploadRecord> {
    const lease = this.#writerLeases.get(writer);
    const live = this.#sessions.live.get(rec.id);
    let ok = keep !== false;
    let failure: unknown = cause;
    try {
      await writer.end();
    } catch (e) {
      ok = false;
      if (!storeAway(failure)) failure = e;
    }
    if (!lease || lease.released || !live || live.owner !== lease) {
      // Not reachable through the leases; kept as the last guard against resurrecting a session.
      throw unknownSession(rec.id);
    }
    if (isStorageFull(failure)) throw await this.#endings.keepAcknowledged(rec, lease);
    if (isStalled(failure)) throw await this.#endings.keepAcknowledged(rec, lease, failure);
    if (!ok) {
      await this.#endings.discardAfterFailure(rec, failure);
      this.#sessions.done(lease);
      if (storeAway(failure)) throw discardedByOutage(failure);
      throw fail('BLOB_UPLOAD_INVALID', 'upload interrupted; the session was discarded, start a new upload');
    }
    const blob = live.writer!;
    const updated: UploadRecord = { ...rec, offset: writer.offset, updatedAt: this.clock.now() };
    // The commit waits for this sync (live.syncing) before its own, which then finds little left.
    if (commitNext && !live.syncing) syncInBackground(live, blob);
    // Recorded before the reply, also when the same request commits next: GC keeps every blob
    // and orphan file whose size equals a recorded session offset (engine/registry/gc.ts), which
    // is what protects bytes between the commit's dedupe check or rename and its transaction.
    try {
      await this.#record(updated);
    } catch (e) {
      if (isStorageFull(e)) throw await this.#endings.keepAcknowledged(rec, lease);
      if (isStalled(e)) {
        // The record may still land late (with bytes that were never acknowledged): the session
        // ends here, and its record's removal commits after it (disk-deadline.ts).
        await this.#endings.discardAfterFailure(rec, e);
        this.#sessions.done(lease);
        throw discardedByStall(e);
      }
      throw e;
    }
    live.unrecorded = undefined;
    // Chunked uploads: sync every CHUNKED_SYNC_BYTES in the background, overlapping the next
    // chunk, so the commit's final sync has little left (the writer syncs within one chunk).
    // Errors are left to the commit's own sync (or the session was cancelled meanwhile).
    live.unsynced += writer.unsyncedBytes;
    if (live.unsynced >= CHUNKED_SYNC_BYTES && !live.syncing) syncInBackground(live, blob);
    try {
      if (keep === 'received') await blob.sync();
    } finally {
      blob.suspend();
      this.#sessions.done(lease);
    }
    return updated;
  }

  /**
   * Completes a session: the backend syncs the bytes, verifies them against `expected` and
   * makes them visible under the digest (reusing a committed copy only when its record exists:
   * see `#reusable`); then one transaction records the blob, links it to the repository and
   * deletes the session. The blob's size is the session's acknowledged offset, which must equal
   * the bytes written and stored. The session ends either way.
   * @throws DIGEST_INVALID (session discarded, nothing stored) when the bytes do not match;
   *         BLOB_UPLOAD_INVALID (session discarded) when the stored bytes and the offset disagree
   *         or its record was removed meanwhile (reaped by another node);
   *         UPLOAD_BUSY when another request holds the session (without `lease`).
   */
  async commit(rec: UploadRecord, expected: Digest, lease?: Lease): Promise<{ digest: Digest; size: number }> {
    const own = this.#sessions.lease(rec, lease, 'PUT');
    const live = this.#sessions.live.get(rec.id)!;
    try {
      if (live.unrecorded) {
        // Completed without a body: record the session before the bytes move (GC keeps blobs
        // of a recorded session's size, gc.ts).
        await this.#record(rec);
        live.unrecorded = undefined;
      }
      if (live.syncing) await live.syncing;
      const blob = live.writer;
      if (!blob || blob.size !== rec.offset) {
        await this.cancel(rec, own);
        throw fail('BLOB_UPLOAD_INVALID', `upload session bytes disagree (${blob?.size ?? 'no'} bytes written, ${rec.offset} acknowledged); the session was discarded, start a new upload`);
      }
      const size = rec.offset;
      try {
        await blob.commit(expected, { reuse: () => this.#reusable(expected, size) });
      } catch (e) {
        await this.#endings.discardAfterFailure(rec, e).catch((d) => { if (!isStalled(d)) throw d; }); // the record, and whatever bytes an I/O error left
        throw storeAway(e) ? discardedByOutage(e) : isStorageFull(e) ? discardedForSpace() : isStalled(e) ? discardedByStall(e) : e;
      }
      const now = this.clock.now();
      // Only while the session's record stands: another node may have reaped it as a dead
      // node's (peer-sessions.ts), and then it no longer kept GC off these bytes; they stay
      // unrecorded (GC's orphan sweep takes them) and the client pushes the blob again.
      let recorded: boolean;
      try {
        recorded = await this.store.metadata.transact(async (tx) => {
          if ((await tx.get(uploadRecords, rec.id)) === undefined) return false;
          await recordVerifiedBlobInTransaction(tx, expected, size, now);
          if (await this.#linkable(tx, rec)) await linkBlobInTransaction(tx, rec.repository, expected, now);
          tx.remove(uploadRecords, rec.id);
          return true;
        });
      } catch (e) {
        if (!isStorageFull(e)) throw e;
        // The metadata database is full: the bytes are in place but unrecorded (GC's orphan
        // sweep takes them), and the session's bytes are gone with them: it ends here.
        await this.#endings.drop(rec).catch(() => {});
        throw discardedForSpace();
      }
      this.#sessions.end(rec);
      if (!recorded) throw fail('BLOB_UPLOAD_INVALID', 'the upload session was reaped while it completed; start a new upload');
      return { digest: expected, size };
    } finally {
      this.#sessions.done(own);
    }
  }

  /** True while the session's app holds the name its repository starts with (see `appNameRef`). */
  async #linkable(tx: MetadataTransaction, rec: UploadRecord): Promise<boolean> {
    if (!this.options.appNameRef) return true;
    const [keyspace, k] = this.options.appNameRef(rec.repository.slice(0, rec.repository.indexOf('/')));
    const holder = await tx.get(keyspace, k);
    return rec.appId !== undefined ? holder === rec.appId : holder !== undefined;
  }

  /**
   * Whether committed bytes of `digest` (of the session's `size`) may be reused instead of the
   * session's own: only when their record exists, is not quarantined (blobs/quarantine.ts) and
   * has that size. Read after the session reached its final size, so GC keeps that record
   * until this upload's transaction; without a record the bytes may be what GC is about to
   * delete, so the verified upload replaces them (engine/registry/gc.ts).
   */
  async #reusable(digest: Digest, size: number): Promise<boolean> {
    const rec = await blobRecord(this.store.metadata, digest);
    return rec !== undefined && !rec.quarantined && rec.size === size;
  }

  /**
   * Cancels a session: record first, then bytes (never a record without its file).
   * @throws UPLOAD_BUSY when another request holds the session (without `lease`).
   */
  async cancel(rec: UploadRecord, lease?: Lease): Promise<void> {
    const own = this.#sessions.lease(rec, lease, 'DELETE');
    try {
      await this.#endings.drop(rec);
    } finally {
      this.#sessions.done(own);
    }
  }

  /**
   * Removes this node's sessions idle for longer than `staleAfterMs` and not in use (a session
   * held by a request is skipped; the next run sees it). Safe while serving, on every node at
   * once. Returns the number removed (upload-reaping.ts).
   */
  reap(): Promise<number> {
    return reapStale(this.#sessions, this.clock.now(), this.options.staleAfterMs, (rec, lease) => this.cancel(rec, lease));
  }

  /**
   * Removes this node's session bytes that belong to no session (a crash between bytes and
   * record, a session ended while its bytes could not be removed: `SessionEndings.discardAfterFailure`); only
   * by the process that owns the sessions. Returns the number of sessions whose bytes were
   * removed (upload-reaping.ts).
   */
  reapOrphans(): Promise<number> {
    return reapOrphanBytes(this.#sessions, this.blobs, this.peers);
  }

  /**
   * Start-up recovery, before any request is served, of this node's sessions only: aborts the
   * blob backend's sessions without a record (crash between bytes and record), resumes the
   * others cut back to their acknowledged offset (bytes past it were never acknowledged), drops
   * those the backend cannot resume or whose acknowledged bytes did not reach the medium, then
   * reaps stale sessions. Other nodes' sessions are left alone (one without a node is ours).
   */
  async #recover(): Promise<void> {
    await this.reapOrphans();
    for (const rec of [...this.#sessions.recorded.values()]) {
      const writer = await this.blobs.resume(rec.id, rec.offset);
      if (writer) this.#sessions.live.get(rec.id)!.writer = writer;
      else await this.#endings.drop(rec);
    }
    await this.reap();
  }
}
