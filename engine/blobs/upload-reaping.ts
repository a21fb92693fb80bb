/**
 * Reaping of upload sessions (uploads.ts `Uploads.reap`, `reapOrphans`): sessions idle for longer
 * than their staleness limit, and session bytes that belong to no session. Both are safe while
 * the server serves: a session held by a request is skipped (the next run sees it).
 */
import type { BlobBackend } from './contract.js';
import type { UploadRecord } from './records.js';
import type { Lease } from './session-book.js';
import type { PeerSessions } from './peer-sessions.js';
import type { UploadSessions } from './upload-sessions.js';

/**
 * Cancels (`cancel`, under the reaper's lease) this node's sessions whose last change
 * (`updatedAt`, ms of the clock) is more than `staleAfterMs` before `now` and that no request
 * holds. Safe on every node at once. Returns the number removed.
 */
export async function reapStale(sessions: UploadSessions, now: number, staleAfterMs: number, cancel: (rec: UploadRecord, lease: Lease) => Promise<void>): Promise<number> {
  let removed = 0;
  const unrecorded = [...sessions.live.values()].flatMap((l) => (l.unrecorded ? [l.unrecorded] : []));
  for (const rec of [...unrecorded, ...sessions.recorded.values()]) {
    if (now - rec.updatedAt <= staleAfterMs || sessions.live.get(rec.id)?.owner || sessions.book.hasEnded(rec.id)) continue;
    let lease: Lease;
    try {
      lease = sessions.claim(rec, 'reaper');
    } catch {
      continue; // taken or ended meanwhile
    }
    await cancel(rec, lease);
    removed++;
  }
  return removed;
}

/**
 * Removes this node's session bytes that belong to no session: what the backend lists
 * (`sessions()`) for this node that is neither open here nor recorded. Such bytes are left by
 * a crash between bytes and record, or by a session ended while its bytes could not be removed
 * (an I/O error, a full disk, the blob store away: uploads.ts `#discardAfterFailure`). Run at
 * start-up and on the reaper's interval (server main.ts), so they never outlive the fault by
 * more than one interval; only by the process that owns the sessions (a tool beside a server
 * does not know its unrecorded sessions: fsck reports such bytes instead). Returns the number of
 * sessions whose bytes were removed.
 */
export async function reapOrphanBytes(sessions: UploadSessions, blobs: BlobBackend, peers: PeerSessions): Promise<number> {
  let removed = 0;
  for await (const { id, node } of blobs.sessions()) {
    if (!peers.ownsSession(node) || sessions.live.has(id) || sessions.recorded.has(id)) continue;
    await blobs.abortSession(id, node ?? '');
    removed++;
  }
  return removed;
}
