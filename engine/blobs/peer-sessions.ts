/**
 * The upload sessions of the OTHER nodes sharing this node's metadata store and blob store
 * (docs/storage.md "Where a session lives", docs/cluster.md "Upload sessions across nodes"):
 * counted per account for the cluster-wide session limit, and reaped when their node left them
 * idle far past the upload TTL (a node that died and never came back).
 *
 * Counting. `Uploads.load` and each reaper round (`refresh`, one range read of `uploads` per
 * round) keep a snapshot of the other nodes' recorded sessions per account; the limit check of
 * a POST adds it to this node's own count from memory, with no read. The snapshot lags by up to
 * one reaper interval and does not see the other nodes' sessions that have no bytes yet (a
 * POST without a PATCH is recorded with its first bytes): the limit is cluster-wide up to that.
 *
 * Reaping (`reap`, run by the holder of the `upload-reaper` lock only, on top of its own
 * sessions which every node reaps itself): a record of another node idle longer than
 * `staleAfterMs` is removed in a transaction that re-reads it and removes it only when it is
 * unchanged (same offset and `updatedAt`) and still that stale, then the session's bytes are
 * aborted under that node's key; a session of another node in the blob store with no record
 * and started longer than `staleAfterMs` ago is aborted. Legacy records (no node) are every
 * node's own and never reaped here.
 *
 * The race with the owning node's own PATCH and PUT (the owner is alive, the reaping node thinks it
 * dead). It needs a session idle longer than `staleAfterMs` (twice the TTL by default) that its
 * owner did not reap itself at the TTL: its owner's reaper failing, or its clock far behind.
 * Then, in any interleaving:
 * - the transaction saw the record the owner's last acknowledged write left, or it changed and
 *   nothing is removed (serializable: the re-check and the removal are one transaction);
 * - when the owner's PATCH uploads a part after the multipart upload was aborted, the part
 *   fails (NoSuchUpload), the append fails and the owner drops the session (record and bytes):
 *   the client gets BLOB_UPLOAD_INVALID and pushes the blob again;
 * - when the owner's PATCH records its new offset after the removal (its record write is blind),
 *   the record comes back without its multipart upload: the owner's next PATCH or PUT of the
 *   session fails the same way and drops it, or the owner's reaper or restart removes it;
 * - when the abort races the owner's CompleteMultipartUpload, RGW may answer the completion
 *   with a 500 (UNAVAILABLE: 503 to the client), a part's or the completed object's absence
 *   becomes BLOB_UPLOAD_INVALID (s3-backend.ts); either way the owner drops the session;
 * - a session still within its put limit (s3-writer.ts: kept whole in memory) has no multipart
 *   upload yet (nor one whose CreateMultipartUpload is still in flight): the abort finds
 *   nothing, and the owner's PUT stores the bytes from its memory or its parts;
 * - when the owner's PUT commits after the removal (with no PATCH in between), its final
 *   transaction finds no session record and records nothing (BLOB_UPLOAD_INVALID): without the
 *   record GC no longer kept the bytes the commit may have reused; bytes it wrote stay
 *   unrecorded and GC's orphan sweep removes them.
 * Nothing unverified becomes visible: a blob appears only through the owner's commit, which
 * compares the digest of the owner's own running hash with the client's. A record may exist
 * briefly without bytes; every path above removes it with the session's next step.
 * test/cluster/s3-node-reaper.test.ts runs these interleavings with random timing.
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import type { BlobBackend } from './contract.js';
import { isUploadId, type UploadRecord } from './records.js';
import { uploads as uploadRecords } from './keyspaces.js';
import { fail, type SlipwayError } from '../errors.js';

/**
 * The error for a request that reached another node than its session's: 404
 * BLOB_UPLOAD_UNKNOWN (distribution spec: the upload is unknown here; the client starts a new
 * upload), with a message naming the owning node.
 */
export function otherNodesSession(id: string, node: string): SlipwayError {
  return fail('BLOB_UPLOAD_UNKNOWN',
    `blob upload unknown to this node: the session belongs to node "${node}" (send its requests to the Location that node returned, or start a new upload)`,
    { uuid: id.slice(0, 64), node });
}

/** Other nodes' recorded sessions (see the file header). */
export class PeerSessions {
  /** Recorded sessions of other nodes per account, as of the last `refresh`. */
  #byAccount = new Map<string, number>();

  /**
   * @param node this node's name; records of another (non-empty) node are peers'.
   * @param staleAfterMs how long a peer's session must be idle before `reap` removes it (ms).
   */
  constructor(
    readonly metadata: MetadataStore,
    readonly blobs: BlobBackend,
    readonly clock: Clock,
    readonly node: string,
    readonly staleAfterMs: number,
  ) {}

  /**
   * Whether a session of `node` (a record's `node`, a stored session's `SessionInfo.node`) is
   * this node's: its own name, or none (records and keys of builds before node names, and the
   * filesystem's sessions, belong to every node).
   */
  ownsSession(node: string | undefined): boolean {
    return !node || node === this.node;
  }

  /** Whether `rec` belongs to another node (see `ownsSession`). */
  isPeers(rec: UploadRecord): boolean {
    return !this.ownsSession(rec.node);
  }

  /** Replaces the snapshot with the peers' records among `records` (all of `uploads`). */
  take(records: Iterable<UploadRecord>): void {
    const counts = new Map<string, number>();
    for (const rec of records) if (this.isPeers(rec)) counts.set(rec.accountId, (counts.get(rec.accountId) ?? 0) + 1);
    this.#byAccount = counts;
  }

  /** Reads every session record (one range read) and takes the peers' into the snapshot. */
  async refresh(): Promise<UploadRecord[]> {
    const all = (await this.metadata.range(uploadRecords)).map((e) => e.value);
    this.take(all);
    return all;
  }

  /**
   * The node owning session `id` when it is another node's (one read of its record), for the
   * error of a request that reached this node instead; undefined when the session is this
   * node's, a legacy one, or unknown.
   */
  async ownerOf(id: string): Promise<string | undefined> {
    if (!isUploadId(id)) return undefined;
    const rec = await this.metadata.get(uploadRecords, id);
    return rec && this.isPeers(rec) ? rec.node : undefined;
  }

  /** Recorded sessions of other nodes for `accountId`, as of the last refresh. */
  count(accountId: string): number {
    return this.#byAccount.get(accountId) ?? 0;
  }

  /**
   * Removes the peers' sessions idle longer than `staleAfterMs` (records, then bytes) and the
   * peers' bytes in the blob store without a record started that long ago. Run by one node at a
   * time (the `upload-reaper` lock); safe beside the owners' requests (file header). Returns
   * the number of sessions removed.
   * @throws what the metadata store or the blob backend throws (the next round retries).
   */
  async reap(): Promise<number> {
    const now = this.clock.now();
    const stale = (at: number) => now - at > this.staleAfterMs;
    // The store's sessions first: a session listed here whose record is read below is skipped.
    const listed: { id: string; node: string; startedAt: Date }[] = [];
    for await (const s of this.blobs.sessions()) {
      if (!this.ownsSession(s.node) && stale(s.startedAt.getTime())) listed.push({ id: s.id, node: s.node!, startedAt: s.startedAt });
    }
    const records = await this.refresh();
    let removed = 0;
    for (const rec of records) {
      if (!this.isPeers(rec) || !stale(rec.updatedAt)) continue;
      const gone = await this.metadata.transact(async (tx) => {
        const cur = await tx.get(uploadRecords, rec.id);
        if (!cur || cur.node !== rec.node || cur.offset !== rec.offset || cur.updatedAt !== rec.updatedAt || !stale(cur.updatedAt)) return false;
        tx.remove(uploadRecords, rec.id);
        return true;
      });
      if (!gone) continue;
      await this.blobs.abortSession(rec.id, rec.node);
      removed++;
    }
    const recorded = new Set(records.map((r) => r.id));
    for (const s of listed) {
      if (recorded.has(s.id)) continue;
      await this.blobs.abortSession(s.id, s.node);
      removed++;
    }
    return removed;
  }
}
