/**
 * The blob backend contract: where blob bytes live, independent of the medium. Two
 * implementations: the local filesystem (fs-backend.ts, the embedded default) and S3-compatible
 * object storage (s3-backend.ts). Nothing here exposes a filesystem path. Modelled on
 * distribution's storage driver contract; the metadata (which repository links which digest,
 * upload session records) lives in the metadata store, not here.
 *
 * Semantics every implementation gives:
 *
 * - **Content addressing, immutability.** A committed blob is stored under its sha256 digest and
 *   its bytes never change afterwards. A commit never overwrites a committed digest with
 *   different bytes: the bytes are verified against the digest before they become visible
 *   under it, so a second commit of the same digest either reuses the present copy (dedupe: the
 *   session's bytes are dropped, `created: false`) or replaces it atomically with identical,
 *   verified bytes (`CommitOptions.reuse` answered false, or the present copy has another size
 *   and so cannot be the digest's).
 * - **Atomic visibility.** A reader sees a committed blob whole or not at all; never a prefix,
 *   never bytes whose digest was not verified. A digest mismatch at commit leaves nothing behind
 *   (neither the blob nor the session) and throws DIGEST_INVALID.
 * - **Ordering with metadata.** `commit` resolves only once the blob is durable (filesystem:
 *   fdatasync + rename + directory fsync; S3: the store acknowledged the object). Only then may
 *   the caller record it. A crash between the two leaves an unrecorded but correct blob (found by
 *   GC's sweep of `list()`), never a record without bytes.
 * - **Delete.** `delete` removes a committed blob; deleting an absent one is not an error. The
 *   caller (GC) must already have removed every record of it. A commit of the same digest that
 *   races the delete is protected by passing the `version` GC saw before removing the record:
 *   the filesystem then deletes only that inode (a replacement committed meanwhile stays; an
 *   interruption is settled by `recover`); S3 compares the commit's version just before deleting (a window of
 *   one round trip remains, covered by the grace period of the GC safety argument).
 * - **Upload sessions.** A session holds the bytes of one in-progress upload, identified by an
 *   id chosen by the caller (`[A-Za-z0-9_-]{1,128}`), written through one `BlobWriter` for the
 *   whole upload (suspended between its requests). Writes are strictly sequential (one call at
 *   a time per session; the caller serialises). Memory held per session is bounded by the
 *   backend's buffer (filesystem: none beyond the chunks in flight; S3: `partSize` × (upload
 *   concurrency + 1), also while suspended). The running sha256 is computed while bytes stream
 *   in (fed by the caller beside the write, possibly on another thread); `commit` does not
 *   re-read the bytes unless the hash state was lost (a session resumed after a restart, or a
 *   hash thread that died). No session path or handle ever reaches the caller.
 * - **Dedupe rule.** Whether a committed copy of the digest may be reused is the caller's
 *   decision (`CommitOptions.reuse`): the registry reuses bytes only when their record exists,
 *   because unrecorded bytes may be what GC is about to delete (engine/registry/gc.ts).
 * - **Crash survival.** Committed blobs survive a crash of the process (and, for the
 *   filesystem, of the machine once `commit` resolved). Session bytes are best effort: the
 *   filesystem keeps them (a session can be resumed after a restart and is re-hashed at
 *   commit); on S3 the hash state and the part not yet uploaded live only in the node's memory,
 *   so a session cannot be resumed after a crash (`resume` returns undefined; the client
 *   restarts its upload) but its uploaded parts are still listed by `sessions()`.
 * - **Recovery.** What a crash leaves is found by `sessions()` (each with its start time and, on
 *   a store shared by nodes, its node) and removed by `abortSession(id, node)`: each node's
 *   upload reaper aborts its sessions older than its limit, and at start-up every session of its
 *   own that the metadata store does not know (engine/blobs/uploads.ts; other nodes' sessions:
 *   peer-sessions.ts). Neither needs a listing of committed blobs.
 *
 * Storage layout (both backends; `<root>` is the data directory or the bucket + key prefix):
 *   `<root>/blobs/sha256/<first 2 hex>/<64 hex>`   committed blob, immutable
 *   `<root>/uploads/<id>`                          filesystem: the session's bytes
 *   `<root>/uploads/<node>/<id>/data`              S3: the session's multipart upload (and, for
 *                                                  an instant after completion, its object);
 *                                                  `<node>` names the owning node (node-name.ts)
 */
import type { Readable } from 'node:stream';
import type { Digest } from '../digest.js';
import type { UploadMemory } from './upload-memory.js';

/** A byte range of a blob: `length` bytes from `offset` (bytes, 0-based). */
export interface ByteRange {
  offset: number;
  /** Omitted: up to the end of the blob. */
  length?: number;
}

/** What a committed blob is, as far as the bytes store knows. */
export interface BlobStat {
  digest: Digest;
  /** Bytes. */
  size: number;
  /**
   * Identifies this commit of the blob: a later commit of the same digest that replaced the
   * bytes has another, also when they are identical (filesystem: the inode number; S3: a random
   * id stored with each commit). For `delete(digest, version)`.
   */
  version?: string;
  /** When the bytes were committed (filesystem: mtime; S3: LastModified). */
  modifiedAt?: Date;
}

/** The result of committing an upload session. */
export interface CommitResult extends BlobStat {
  /**
   * False when the digest was already committed and reused (dedupe: the session's bytes were
   * dropped). Within one backend instance, of concurrent commits of a digest that all reuse,
   * exactly one reports true; a commit that replaced existing bytes reports true.
   */
  created: boolean;
}

/** An upload session still present in the backend (live, abandoned or left by a crash). */
export interface SessionInfo {
  id: string;
  /** When the session started (filesystem: last write; S3: multipart initiation). */
  startedAt: Date;
  /**
   * The node that owns the session, where the store is shared by nodes (S3: the key's node
   * segment, `''` for keys of builds before node names); undefined where every session is this
   * node's (the filesystem: the data directory is node-local).
   */
  node?: string;
}

/**
 * Positional reader of one committed blob, for senders that reuse one buffer per response (no
 * allocation per chunk). The blob stays readable through an open reader even when GC deletes it
 * meanwhile (filesystem: the open descriptor; S3: a read after the delete fails, never returns
 * other bytes).
 */
export interface BlobReader {
  readonly digest: Digest;
  /** Bytes of the blob. */
  readonly size: number;
  /**
   * Fills `into` with the blob's bytes from byte `position`; resolves with the count read, fewer
   * than `into.byteLength` only at the end of the blob.
   * @throws on I/O errors of the medium.
   */
  read(into: Uint8Array, position: number): Promise<number>;
  /**
   * Optional (S3): the `length` bytes from `position` as a stream whose chunks are the caller's
   * to keep (never reused by the reader), for senders that hand each chunk to the socket instead
   * of copying it into a buffer of their own. The stream errors (never ends early) when the medium
   * fails or holds fewer bytes; the reader must not be read otherwise until it is consumed.
   */
  stream?(position: number, length: number): Promise<Readable>;
  /**
   * Optional, with `stream`: the sender is done with `chunk` of such a stream (the client's
   * socket took all of it, or the write failed), so its memory may be reused for a later read
   * (engine/blobs/chunk-pool.ts). Calling it earlier corrupts a response; not calling it only
   * costs an allocation. Chunks it does not know are ignored.
   */
  recycle?(chunk: Buffer): void;
  /**
   * Optional (filesystem): bytes from `position`, at most `length` (what the sender will still
   * ask for, so the reader may read ahead up to there), in a buffer the reader owns and may
   * reuse: valid until the next `lend` or `close`. For senders that hand each chunk off whole
   * before asking for the next. Resolves with at least one byte unless `position` is at the end.
   * @throws on I/O errors of the medium.
   */
  lend?(position: number, length: number): Promise<Uint8Array>;
  /** Releases the reader. Idempotent. */
  close(): Promise<void>;
}

/** How `BlobWriter.commit` treats a blob of the same digest that is already committed. */
export interface CommitOptions {
  /**
   * Asked (once, while commits of this digest are serialised) when a blob of the digest is
   * already committed with the session's size: true reuses it (dedupe: the session's bytes are
   * dropped, `created: false`), false replaces it with the session's verified bytes (the
   * registry answers false unless the blob's record exists, engine/registry/gc.ts). An existing
   * blob of another size is always replaced: its bytes cannot be the digest's. Default: reuse.
   */
  reuse?: (existing: BlobStat) => boolean | Promise<boolean>;
}

/**
 * Writer of one upload session, alive across the requests of the upload (suspended between
 * them). Calls are sequential — never two at once on one writer — except `sync`, which may run
 * beside later writes (a background sync between PATCHes).
 *
 * Two ways to add bytes: `append` (hashes and writes one buffer), or `feedHash` + `write`
 * separately, so the caller can hash on another thread while the same buffers are written
 * (engine/blobs/writer.ts). Either way the running sha256 must be fed exactly the bytes written,
 * in order; `commit` trusts it only when it was fed as many bytes as were written, and re-hashes
 * the stored bytes otherwise.
 */
export interface BlobWriter {
  readonly id: string;
  /** Bytes written so far (for a resumed session, including those of the earlier process). */
  readonly size: number;
  /**
   * Hashes and writes `bytes` at the current end. Resolves once the buffer may be reused by the
   * caller and the session's memory is back within its bound (back-pressure: await it before
   * the next chunk).
   * @throws on I/O errors of the medium; the session is then unusable (abort it).
   */
  append(bytes: Uint8Array): Promise<void>;
  /**
   * Feeds `bytes` to the session's running sha256 (the next bytes in order); `done` runs once
   * the buffer may be reused (the hash may read it on another thread, without a copy when it is
   * SharedArrayBuffer-backed).
   */
  feedHash(bytes: Buffer, done: () => void): void;
  /**
   * Writes `chunks`, in order, at the current end without hashing them (one vectored write on
   * the filesystem; copied into the part buffer on S3). Resolves once every byte is written and
   * the buffers may be reused; `size` grows by their total then.
   * @throws on I/O errors of the medium; the session is then unusable (abort it).
   */
  write(chunks: readonly Uint8Array[]): Promise<void>;
  /**
   * Makes the bytes written before the call durable as far as the medium allows (filesystem:
   * fdatasync; S3: the parts in flight are stored, the part still buffered stays in memory).
   * May run while later writes proceed.
   * @throws on I/O errors of the medium.
   */
  sync(): Promise<void>;
  /**
   * Releases what the writer holds between requests once its operations in flight finished
   * (filesystem: the descriptor; S3 keeps its multipart state and part buffer in memory). The
   * next call takes it again; the session and its bytes stay.
   */
  suspend(): void;
  /**
   * Optional (S3): takes from the upload memory budget what the session needs before an append
   * accepts its first byte (S3: a part buffer's slot, writer-specific, s3-writer.ts). False when
   * the budget cannot give it: the caller refuses the append (503) and nothing changes.
   */
  reserve?(): boolean;
  /**
   * Optional (filesystem): cuts the session back to `size` bytes, its acknowledged offset, after
   * an append failed part-way (a full disk), so it stays open to be resumed from there; the
   * running hash is given up and the commit re-hashes the bytes. Without it, such a session is
   * discarded.
   * @throws on I/O errors of the medium (the caller then discards the session).
   */
  rewind?(size: number): Promise<void>;
  /**
   * Makes the bytes durable, verifies that they hash to `expected`, then makes them visible under
   * that digest (or reuses a committed copy, `options.reuse`) and ends the session.
   * @throws SlipwayError DIGEST_INVALID when they do not hash to `expected`; BLOB_UPLOAD_INVALID
   *   when the medium holds another number of bytes than were written. Either way the session
   *   is aborted: nothing stays.
   */
  commit(expected: Digest, options?: CommitOptions): Promise<CommitResult>;
  /** Discards the session and its bytes (once operations in flight finished). Idempotent. */
  abort(): Promise<void>;
}

/** A blob backend. All sizes and offsets in bytes. */
export interface BlobBackend {
  /** Short name for logs and errors: "fs", "s3". */
  readonly kind: string;
  /** Size of a committed blob, or undefined when absent. */
  stat(digest: Digest): Promise<BlobStat | undefined>;
  /**
   * A stream of a committed blob's bytes (all, or `range` of them).
   * @throws SlipwayError BLOB_UNKNOWN when absent; RANGE_NOT_SATISFIABLE when `range` starts at
   *   or after the end (an empty blob's whole read is fine).
   */
  read(digest: Digest, range?: ByteRange): Promise<Readable>;
  /**
   * A positional reader of a committed blob (the pull path). `first` is a hint: the bytes the
   * caller will read first (S3 starts its one GetObject there and learns the size from its
   * answer, with no HeadObject before it); reads elsewhere still work.
   * @throws SlipwayError BLOB_UNKNOWN when absent.
   */
  open(digest: Digest, first?: ByteRange): Promise<BlobReader>;
  /**
   * True when `stat` asks a local medium (the filesystem: one `stat` on libuv's pool, no network
   * round trip): the registry then checks a blob's size against its record before serving it
   * (blobs/quarantine.ts `sizeCheck`). Absent on media that need a round trip (S3), whose HEAD
   * answers from the record alone.
   */
  readonly statsLocally?: boolean;
  /**
   * Deletes a committed blob; false when it was absent. With `ifVersion` (a `BlobStat.version`),
   * only when the blob is still that version: false, and the blob untouched, otherwise.
   */
  delete(digest: Digest, ifVersion?: string): Promise<boolean>;
  /**
   * Settles what deletes interrupted by a crash left behind (filesystem: files moved aside and
   * not yet unlinked): a blob `keep` says is still recorded and is absent goes back, the rest is
   * removed. Absent on media whose delete is one call (S3).
   */
  recover?(keep: (digest: Digest) => boolean | Promise<boolean>): Promise<void>;
  /** Every committed digest, in no particular order (GC's sweep). */
  list(): AsyncIterable<Digest>;
  /**
   * Starts a new upload session. Does no I/O: the medium sees the session with its first bytes
   * (filesystem: the file is created by the first write, sync or commit, and that call fails
   * with BLOB_UPLOAD_INVALID if a session of that id is already stored).
   * `memory` is the global upload buffer budget (SLIPWAY_UPLOAD_MEMORY) from which a backend
   * that buffers session bytes itself (S3's part buffers) takes them; default no limit.
   * @throws SlipwayError BLOB_UPLOAD_INVALID when the id is malformed or in use by a writer of
   *   this instance.
   */
  create(id: string, memory?: UploadMemory): Promise<BlobWriter>;
  /**
   * Reopens a session left by an earlier process when the backend can (filesystem), with its
   * bytes so far, suspended; its running hash is lost (commit re-hashes). With `size`, bytes
   * past `size` are cut off (they were never acknowledged to the client). Undefined when it
   * cannot, the session is unknown, or it holds fewer than `size` bytes (the client restarts).
   */
  resume(id: string, size?: number): Promise<BlobWriter | undefined>;
  /** Every session present in the backend, live or abandoned (on a shared store, of every node: `SessionInfo.node`). */
  sessions(): AsyncIterable<SessionInfo>;
  /**
   * Removes whatever the session `id` left (bytes, multipart parts). Idempotent. `node` names
   * the owner on a shared store (a `SessionInfo.node`); default this instance's own sessions.
   */
  abortSession(id: string, node?: string): Promise<void>;
  /**
   * A URL from which a client may GET the blob directly for `expiresInSeconds`, or undefined
   * when the backend has none (filesystem). Does not check that the blob exists.
   */
  presignedUrl(digest: Digest, expiresInSeconds: number): Promise<string | undefined>;
}

const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** True when `id` is a valid upload session id for every backend. */
export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}

/** `blobs/sha256/<2 hex>/<hex>`: the relative key of a committed blob. */
export function blobKey(digest: Digest): string {
  const hex = digest.slice(7);
  return `blobs/sha256/${hex.slice(0, 2)}/${hex}`;
}

/** The digest named by a relative blob key, or undefined when `key` is not one. */
export function digestOfKey(key: string): Digest | undefined {
  const m = /^blobs\/sha256\/([a-f0-9]{2})\/([a-f0-9]{64})$/.exec(key);
  return m && m[2].startsWith(m[1]) ? (`sha256:${m[2]}` as Digest) : undefined;
}
