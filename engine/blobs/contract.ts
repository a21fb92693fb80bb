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
 *   under it, so a second commit of the same digest either finds it present (dedupe: the
 *   session's bytes are dropped, `created: false`) or writes identical bytes.
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
 *   interruption is settled by `recover`); S3 compares the ETag just before deleting (a window of
 *   one round trip remains, covered by the grace period of the GC safety argument).
 * - **Upload sessions.** A session holds the bytes of one in-progress upload, identified by an
 *   id chosen by the caller (`[A-Za-z0-9_-]{1,128}`). Appends are strictly sequential (one call
 *   at a time per session; the caller serialises). Memory held per session is bounded by the
 *   backend's buffer (filesystem: none beyond the chunk in flight; S3: `partSize` × (upload
 *   concurrency + 1)). The running sha256 is computed while bytes stream in; `commit` does not
 *   re-read the bytes unless the hash state was lost (a session resumed after a restart).
 * - **Crash survival.** Committed blobs survive a crash of the process (and, for the
 *   filesystem, of the machine once `commit` resolved). Session bytes are best effort: the
 *   filesystem keeps them (a session can be resumed after a restart and is re-hashed at
 *   commit); on S3 the hash state and the part not yet uploaded live only in the node's memory,
 *   so a session cannot be resumed after a crash (`resume` returns undefined; the client
 *   restarts its upload) but its uploaded parts are still listed by `sessions()`.
 * - **Recovery.** What a crash leaves is found by `sessions()` (each with its start time) and
 *   removed by `abortSession(id)`: the upload reaper aborts sessions older than its limit, and
 *   at start-up every session the metadata store does not know. Neither needs a listing of
 *   committed blobs.
 *
 * Storage layout (both backends; `<root>` is the data directory or the bucket + key prefix):
 *   `<root>/blobs/sha256/<first 2 hex>/<64 hex>`   committed blob, immutable
 *   `<root>/uploads/<id>`                          filesystem: the session's bytes
 *   `<root>/uploads/<id>/data`                     S3: the session's multipart upload (and, for
 *                                                  an instant after completion, its object)
 */
import type { Readable } from 'node:stream';
import type { Digest } from '../digest.js';

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
   * bytes has another (filesystem: the inode number; S3: the ETag). For `delete(digest, version)`.
   */
  version?: string;
  /** When the bytes were committed (filesystem: mtime; S3: LastModified). */
  modifiedAt?: Date;
}

/** The result of committing an upload session. */
export interface CommitResult extends BlobStat {
  /**
   * False when the digest was already committed (dedupe: the session's bytes were dropped).
   * Within one backend instance exactly one of concurrent commits of a digest reports true.
   */
  created: boolean;
}

/** An upload session still present in the backend (live, abandoned or left by a crash). */
export interface SessionInfo {
  id: string;
  /** When the session started (filesystem: last write; S3: multipart initiation). */
  startedAt: Date;
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
  /** Releases the reader. Idempotent. */
  close(): Promise<void>;
}

/** Writer of one upload session. Calls are sequential: never two at once on one writer. */
export interface BlobWriter {
  readonly id: string;
  /** Bytes appended so far. */
  readonly size: number;
  /**
   * Appends `bytes` at the current end. Resolves once the buffer may be reused by the caller
   * and the session's memory is back within its bound (back-pressure: await it before the next
   * chunk).
   * @throws on I/O errors of the medium; the session is then unusable (abort it).
   */
  append(bytes: Uint8Array): Promise<void>;
  /**
   * Verifies that the bytes hash to `expected`, then makes them visible under that digest and
   * ends the session.
   * @throws SlipwayError DIGEST_INVALID when they do not (the session is aborted: nothing stays).
   */
  commit(expected: Digest): Promise<CommitResult>;
  /** Discards the session and its bytes. Idempotent. */
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
   * A positional reader of a committed blob (the pull path).
   * @throws SlipwayError BLOB_UNKNOWN when absent.
   */
  open(digest: Digest): Promise<BlobReader>;
  /**
   * The size of a committed blob answered without waiting, when the medium allows it (the
   * filesystem: one `stat` of a cached inode); absent on media that need a round trip (S3).
   * Lets a HEAD answer within its transport callback (pipelined keep-alive connections).
   */
  statSync?(digest: Digest): BlobStat | undefined;
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
   * Starts a new upload session.
   * @throws SlipwayError BLOB_UPLOAD_INVALID when the id is malformed or already in use.
   */
  create(id: string): Promise<BlobWriter>;
  /**
   * Reopens a session left by an earlier process when the backend can (filesystem), with its
   * bytes so far; undefined when it cannot or the session is unknown (the client restarts).
   */
  resume(id: string): Promise<BlobWriter | undefined>;
  /** Every session present in the backend, live or abandoned. */
  sessions(): AsyncIterable<SessionInfo>;
  /** Removes whatever the session `id` left (bytes, multipart parts). Idempotent. */
  abortSession(id: string): Promise<void>;
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
