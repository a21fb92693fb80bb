/**
 * The in-memory bookkeeping of upload sessions (engine/blobs/uploads.ts): the state of each open
 * session (its blob writer, its lease, its background sync), the open sessions of each account
 * (the per-account limit) and the ids of ended sessions (tombstones: never served again).
 */
import type { BlobWriter } from './contract.js';
import type { UploadRecord } from './records.js';
import { RecentMap } from '../recent-map.js';

/**
 * Exclusive use of one session by one operation (a PATCH, a PUT from its body to its commit, a
 * DELETE, the reaper). Taken with `Uploads.claim`, given back with `Uploads.release`.
 */
export interface Lease {
  readonly id: string;
  /** What holds it, for the message a concurrent request gets ("PATCH", "PUT", ...). */
  readonly op: string;
  /** Set once released or once the session ended; a released lease authorises nothing. */
  released: boolean;
}

/** One open session's state in this process. */
export interface LiveState {
  /**
   * The session's bytes (with its running hash); undefined only for sessions loaded without
   * being resumed (`load`, the offline tools), which can be reaped but not written.
   */
  writer: BlobWriter | undefined;
  /** The operation that owns the session now, if any. */
  owner: Lease | null;
  /** Bytes appended since the session's last background sync began. */
  unsynced: number;
  /** A background sync of the session's bytes, started between chunks. */
  syncing: Promise<void> | null;
  /** The session's record while it is not in the store yet (no bytes recorded so far). */
  unrecorded?: UploadRecord;
}

/** The state of a session just opened, loaded or resumed. */
export function newLive(writer: BlobWriter | undefined): LiveState {
  return { writer, owner: null, unsynced: 0, syncing: null };
}


/** Ids of ended sessions remembered (tombstones): the latest 25,000 to 50,000, about 3 MB at most. */
const TOMBSTONES = 50_000;

/** Open sessions per account, and the ids of ended sessions. */
export class SessionBook {
  /** Sessions that were completed or cancelled: never written again (the latest, recent-map.ts). */
  readonly #ended = new RecentMap<string, true>(TOMBSTONES);
  readonly #byAccount = new Map<string, Set<string>>();

  /** Counts `rec` as open for its account. */
  opened(rec: UploadRecord): void {
    let set = this.#byAccount.get(rec.accountId);
    if (!set) this.#byAccount.set(rec.accountId, (set = new Set()));
    set.add(rec.id);
  }

  /** `rec` ended: no longer counted, and its id is remembered (among the latest TOMBSTONES). */
  ended(rec: UploadRecord): void {
    const set = this.#byAccount.get(rec.accountId);
    set?.delete(rec.id);
    if (set?.size === 0) this.#byAccount.delete(rec.accountId);
    this.#ended.set(rec.id, true);
  }

  /** Whether the session `id` ended (completed or cancelled) in this process. */
  hasEnded(id: string): boolean {
    return this.#ended.has(id);
  }

  /** Open sessions of an account. */
  openSessions(accountId: string): number {
    return this.#byAccount.get(accountId)?.size ?? 0;
  }
}
