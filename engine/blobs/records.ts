/** Records of the blob engine (see engine/store.ts for where they live). */

/** What a worker found in a layer tar (docs/rules.md What the service does 6: whiteouts are not honoured). */
export interface LayerScan {
  /** Number of whiteout entries (`.wh.` basenames, including opaque `.wh..wh..opq`). */
  whiteouts: number;
  /** Up to 5 whiteout paths, for messages. */
  examples: string[];
  /** False when the blob is not a (gzip-compressed) tar; then nothing is known about it. */
  readable: boolean;
  /**
   * Set when the scan stopped at a limit (engine/registry/inspect-limits.ts): why, in words
   * ("it inflates past 8 GiB"); the counts cover only what was read before.
   */
  unscanned?: string;
}

/** One stored blob: `blobs/sha256/<2 hex>/<hex>` on disk plus this record. */
export interface BlobRecord {
  /** Bytes. */
  size: number;
  /** ms since epoch when the bytes were committed. */
  createdAt: number;
  /** Number of (repository, manifest) pairs that reference this blob. */
  refs: number;
  /**
   * ms since epoch of the last HEAD, GET or mount of this blob while it was unreferenced
   * (refs 0): GC keeps a blob committed or touched less than its grace period ago, so a client
   * that saw the blob exists can still reference it from a manifest (engine/registry/gc.ts).
   * Written at most every `Registry.touchEveryMs`, and only while refs is 0.
   */
  touchedAt?: number;
  /**
   * Set when the bytes failed verification (engine/blobs/quarantine.ts): the blob is then not
   * served (BLOB_UNKNOWN), not mounted and not deduplicated onto; the next verified upload of the
   * digest replaces bytes and record. The reason, for operators.
   */
  quarantined?: string;
  /** Cached layer inspection, filled at the first manifest PUT that names this blob as a layer. */
  scan?: LayerScan;
}

/**
 * Whether `id` has the form of the ids the upload service gives sessions (engine/blobs/uploads.ts:
 * 16 random bytes, lowercase hex). Narrower than the blob contract's `isSessionId`, which every
 * backend accepts.
 */
export function isUploadId(id: string): boolean {
  return /^[a-f0-9]{32}$/.test(id);
}

/**
 * An upload session: bytes so far live in the blob backend's session `id` (filesystem
 * `uploads/<id>`, S3 `uploads/<node>/<id>/data`).
 */
export interface UploadRecord {
  id: string;
  /**
   * Name of the node that owns the session (engine/blobs/node-name.ts): only that node serves,
   * recovers and reaps it (others reap it when idle far past the TTL). Absent on records of
   * builds before node names: the first node that starts adopts those (engine/blobs/uploads.ts).
   */
  node?: string;
  /** Repository the blob is uploaded into (`<app>/<process-type>`). */
  repository: string;
  /** Account that started the session. */
  accountId: string;
  /**
   * Id of the app that held the repository's name when the session started; the blob is linked
   * at commit only while that app still holds the name (an app rename, engine/registry/rename.ts).
   * Absent on records of earlier builds (then: while any app holds it).
   */
  appId?: string;
  /** Bytes received and accepted so far (the next PATCH must start here). */
  offset: number;
  /** ms since epoch. */
  createdAt: number;
  updatedAt: number;
}
