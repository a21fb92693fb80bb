/**
 * A full disk, as the engine reports it: the storage under the data directory (blob files,
 * upload session files, the embedded LMDB metadata database) refused a write because it has no
 * space left (ENOSPC), the user's quota is spent (EDQUOT), or LMDB's map is full (MDB_MAP_FULL).
 * Every such failure becomes one SlipwayError, STORAGE_FULL, which the hosts answer with
 * 507 Insufficient Storage (RFC 4918 §11.5) and a message that says storage is full
 * (docs/faults.md "A full data disk"), instead of a 500 or a client error.
 */
import { fail, isSlipwayError, type SlipwayError } from '../errors.js';

/** Retry-After of a STORAGE_FULL answer (seconds): an operator has to free space first. */
export const STORAGE_FULL_RETRY_AFTER_SECONDS = 30;

/** errno codes of a write refused for want of space. */
const NO_SPACE_CODES = new Set(['ENOSPC', 'EDQUOT']);
/** LMDB's own "full" conditions, as lmdb-js words them (MDB_MAP_FULL is -30792). */
const LMDB_FULL = /MDB_MAP_FULL|MDB_TXN_FULL|No space left on device|Disk quota exceeded/;

/** Whether `e` is an I/O error for want of space (a node:fs errno error or an lmdb-js error). */
export function isNoSpace(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  if (isSlipwayError(e)) return e.code === 'STORAGE_FULL';
  const err = e as { code?: unknown; errno?: unknown; message?: unknown };
  if (typeof err.code === 'string' && NO_SPACE_CODES.has(err.code)) return true;
  if (err.code === -30792 || err.errno === -30792) return true;
  return typeof err.message === 'string' && LMDB_FULL.test(err.message);
}

/** When this process last met a full disk (performance.now(), ms). */
let lastNoSpaceAt = -Infinity;

/**
 * The STORAGE_FULL error for a write of `what` that failed for want of space.
 * @param what the thing that could not be written, for the message ("the upload's bytes")
 */
export function storageFull(what: string): SlipwayError {
  lastNoSpaceAt = performance.now();
  return fail('STORAGE_FULL', `the registry's storage is full: ${what} could not be written (no space left on the data disk); nothing of this request was kept, retry once an operator has freed space`, { retryAfter: STORAGE_FULL_RETRY_AFTER_SECONDS });
}

/** `e` itself, or STORAGE_FULL (about `what`) when it is an error for want of space. */
export function asStorageFull(e: unknown, what: string): unknown {
  if (isSlipwayError(e)) return e;
  return isNoSpace(e) ? storageFull(what) : e;
}

/**
 * Whether a write of this process failed for want of space within the last `ms` milliseconds
 * (an I/O error soon after is the same full disk: a failed write-back surfaces as EIO later).
 */
export function noSpaceWithin(ms: number): boolean {
  return performance.now() - lastNoSpaceAt <= ms;
}
