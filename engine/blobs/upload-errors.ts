/**
 * The errors an upload session's requests end with when the session ends or is discarded
 * (docs/faults.md: "A full data disk", "A data disk that hangs", "The object store (S3) goes
 * away"): each says what became of the session, so the client knows whether to resume or start
 * a new upload.
 */
import { fail, isSlipwayError, type SlipwayError } from '../errors.js';
import { storageFull } from '../storage/storage-full.js';

/** BLOB_UPLOAD_UNKNOWN for session `id` (distribution spec: 404, `uuid` in the detail). */
export const unknownSession = (id: string): SlipwayError => fail('BLOB_UPLOAD_UNKNOWN', 'blob upload unknown to registry', { uuid: id.slice(0, 64) });

/** Whether `e` says the blob store was unavailable (s3-read.ts `storeUnavailable`). */
export function storeAway(e: unknown): e is SlipwayError {
  return isSlipwayError(e) && e.code === 'BLOB_STORE_UNAVAILABLE';
}

/**
 * The answer to a request whose session the blob store's unavailability ended: the store's
 * error (503 with Retry-After), saying that the session was discarded (docs/faults.md).
 */
export function discardedByOutage(e: SlipwayError): SlipwayError {
  return fail('BLOB_STORE_UNAVAILABLE', `${e.message}; the upload session was discarded (the bytes it had taken are not kept): start a new upload once the store is back`, e.detail);
}

/** STORAGE_STALLED for a session that was discarded. */
export function discardedByStall(e: SlipwayError): SlipwayError {
  return fail('STORAGE_STALLED', `${e.message}. The upload session was discarded: start a new upload once the disk answers`, e.detail);
}

/** Whether `e` is the engine's STORAGE_FULL. */
export function isStorageFull(e: unknown): boolean {
  return isSlipwayError(e) && e.code === 'STORAGE_FULL';
}

/** STORAGE_FULL for a session that was discarded. */
export function discardedForSpace(): Error {
  const base = storageFull("the upload's bytes");
  return fail('STORAGE_FULL', `${base.message}. The upload session was discarded: start a new upload`, base.detail);
}
