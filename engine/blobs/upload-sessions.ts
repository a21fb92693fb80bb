/**
 * The open upload sessions of one server (uploads.ts `Uploads`), in memory: each session's live
 * state (its writer, its owner), the stored records of the recorded ones, the per-account count
 * and the tombstones of ended sessions (session-book.ts), and the leases: one owner at a time, a
 * concurrent operation is refused with UPLOAD_BUSY (409).
 */
import { fail } from '../errors.js';
import type { BlobWriter } from './contract.js';
import { isUploadId, type UploadRecord } from './records.js';
import { SessionBook, type Lease, type LiveState } from './session-book.js';
import { unknownSession } from './upload-errors.js';

/** The sessions, their leases and tombstones (see the file header). */
export class UploadSessions {
  /** Every open session of this node by id: its writer, its owner, its record until recorded. */
  readonly live = new Map<string, LiveState>();
  /** Open sessions per account, and tombstones of ended ones. */
  readonly book = new SessionBook();
  /** Leases taken inside beginAppend/commit/cancel when the caller passed none (`lease`). */
  readonly #implicit = new WeakSet<Lease>();
  /** The stored record of every recorded open session (the store's `uploads`, kept in step). */
  readonly recorded = new Map<string, UploadRecord>();

  /**
   * Looks a session up.
   * @throws BLOB_UPLOAD_UNKNOWN when it does not exist, ended, or belongs to another repository.
   */
  get(id: string, repository: string): UploadRecord {
    const valid = isUploadId(id) && !this.book.hasEnded(id);
    const rec = valid ? (this.live.get(id)?.unrecorded ?? this.recorded.get(id)) : undefined;
    if (!rec || rec.repository !== repository) throw unknownSession(id);
    return rec;
  }

  /**
   * Takes the session for one operation. Every write to a session (append, commit, cancel,
   * reaping) happens under its one lease, so no two of them overlap.
   * @throws BLOB_UPLOAD_UNKNOWN when the session ended; UPLOAD_BUSY when another operation holds it.
   */
  claim(rec: UploadRecord, op: string): Lease {
    if (this.book.hasEnded(rec.id)) throw unknownSession(rec.id);
    const live = this.live.get(rec.id);
    if (!live) throw unknownSession(rec.id);
    if (live.owner) {
      throw fail('UPLOAD_BUSY', `upload session ${rec.id} is in use by a ${live.owner.op} request; retry once it has finished (GET the session for its offset)`, { uuid: rec.id });
    }
    const lease: Lease = { id: rec.id, op, released: false };
    live.owner = lease;
    return lease;
  }

  /** Gives a lease back (no effect when already released or the session ended). */
  release(lease: Lease): void {
    const live = this.live.get(lease.id);
    if (live?.owner === lease) live.owner = null;
    lease.released = true;
  }

  /**
   * The lease an operation runs under: `lease` when it is the session's current one, else (none
   * given) a new claim released by `done`.
   * @throws BLOB_UPLOAD_UNKNOWN when `lease` is not the session's; what `claim` throws
   */
  lease(rec: UploadRecord, lease: Lease | undefined, op: string): Lease {
    if (!lease) {
      const own = this.claim(rec, op);
      this.#implicit.add(own);
      return own;
    }
    if (lease.released || lease.id !== rec.id || this.live.get(rec.id)?.owner !== lease) throw unknownSession(rec.id);
    return lease;
  }

  /** Releases `lease` when it was taken by `lease` (an operation's own), not by the caller. */
  done(lease: Lease): void {
    if (this.#implicit.has(lease)) this.release(lease);
  }

  /** Forgets a session for good: no lease, no hash, no count; its id is never served again. */
  end(rec: UploadRecord): BlobWriter | undefined {
    const live = this.live.get(rec.id);
    if (live?.owner) live.owner.released = true;
    this.live.delete(rec.id);
    this.recorded.delete(rec.id);
    this.book.ended(rec);
    return live?.writer;
  }
}
