/**
 * How an upload session ends other than by its commit (uploads.ts `Uploads`): cancelled (record
 * first, then bytes: never a record without its file), or after a failed append or commit, where
 * a full or hung data disk leaves the session open at its acknowledged offset when the backend
 * can cut it back (docs/faults.md "A full data disk", "A data disk that hangs").
 */
import { isStalled } from '../storage/disk-deadline.js';
import type { MetadataStore } from '../storage/metadata.js';
import { fail, type SlipwayError } from '../errors.js';
import { storageFull } from '../storage/storage-full.js';
import type { BlobBackend } from './contract.js';
import type { UploadRecord } from './records.js';
import type { Lease } from './session-book.js';
import { uploads as uploadRecords } from './keyspaces.js';
import { discardedByStall, discardedForSpace, storeAway } from './upload-errors.js';
import type { UploadSessions } from './upload-sessions.js';

/** The endings of the sessions of one `Uploads` (see the file header). */
export class SessionEndings {
  /**
   * @param sessions the open sessions (each ending forgets its session there first)
   * @param store the metadata store's owner (its session records)
   * @param blobs the blob backend holding the sessions' bytes
   */
  constructor(readonly sessions: UploadSessions, readonly store: { readonly metadata: MetadataStore }, readonly blobs: BlobBackend) {}

  /**
   * After an append failed for want of space (STORAGE_FULL), or the data disk did not complete
   * it in time (`stall`: STORAGE_STALLED; the backend cuts the rest once the disk answers,
   * stall-guard.ts): cuts the session back to its acknowledged offset and leaves it open when
   * the backend can, else discards it. Returns the error for the client, saying which.
   */
  async keepAcknowledged(rec: UploadRecord, lease: Lease, stall?: SlipwayError): Promise<Error> {
    const blob = this.sessions.live.get(rec.id)?.writer;
    try {
      if (blob?.rewind) {
        await blob.rewind(rec.offset);
        blob.suspend();
        const base = stall ?? storageFull("this request's bytes");
        const later = stall ? ' once the disk answers' : '';
        return fail(base.code, `${base.message}. The upload session keeps its ${rec.offset} acknowledged bytes: resume it from offset ${rec.offset} (GET the session for its Range)${later}, or start a new upload`, { ...(base.detail as object), offset: rec.offset });
      }
    } catch {
      // Could not cut it back: discarded below.
    } finally {
      this.sessions.done(lease);
    }
    if (stall) {
      await this.discardAfterFailure(rec, stall).catch(() => {});
      return discardedByStall(stall);
    }
    await this.drop(rec).catch(() => {}); // the lease is the caller's; the session ends here either way
    return discardedForSpace();
  }

  /** Ends a session: its record, then its bytes (the writer's, or whatever the backend holds). */
  async drop(rec: UploadRecord): Promise<void> {
    // A session never recorded has no record to remove (and a full disk cannot refuse that).
    const neverRecorded = this.sessions.live.get(rec.id)?.unrecorded !== undefined;
    const writer = this.sessions.end(rec);
    if (!neverRecorded) await this.store.metadata.transact((tx) => tx.remove(uploadRecords, rec.id));
    if (writer) await writer.abort();
    else await this.blobs.abortSession(rec.id, rec.node ?? '');
  }

  /**
   * Ends a session after a failed append or commit (`failure`; the caller holds its lease): its
   * record goes (that error, if any, is thrown), then its bytes, whose removal's own error never
   * replaces the failure the client is told about. When the blob store is away, the bytes'
   * removal is not waited for (it would fail or stall too, and the answer must not wait past
   * the failure): what it cannot remove is `reapOrphans`'s.
   */
  async discardAfterFailure(rec: UploadRecord, failure: unknown): Promise<void> {
    const writer = this.sessions.end(rec);
    const removal = this.store.metadata.transact((tx) => tx.remove(uploadRecords, rec.id));
    // The disk hangs: the record's removal commits once it answers (the answer does not wait
    // for a second deadline); start-up recovery settles a record whose removal never landed.
    if (isStalled(failure)) void removal.catch(() => {});
    else await removal;
    const bytes = writer ? writer.abort() : this.blobs.abortSession(rec.id, rec.node ?? '');
    const settled = bytes.catch(() => {}); // what is left is reapOrphans'
    if (!storeAway(failure)) await settled;
  }
}
