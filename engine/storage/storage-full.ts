/**
 * A full disk, as the engine reports it: the storage under the data directory (blob files,
 * upload session files, the embedded LMDB metadata database) refused a write because it has no
 * space left (ENOSPC), the user's quota is spent (EDQUOT), or LMDB's map is full (MDB_MAP_FULL).
 * Every such failure becomes one SlipwayError, STORAGE_FULL, which the hosts answer with
 * 507 Insufficient Storage (RFC 4918 §11.5) and a message that says storage is full
 * (docs/faults.md "A full data disk"), instead of a 500 or a client error.
 */
import { statfs } from 'node:fs/promises';
import { fail, isSlipwayError, type SlipwayError } from '../errors.js';
import { dataDisk } from './disk-deadline.js';

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

/** Free bytes below which an I/O error counts as a full disk (a page or two of LMDB's). */
const NEARLY_FULL_BYTES = 1024 * 1024;
/** How long after a write refused for want of space an I/O error still counts as that full disk, ms. */
const NO_SPACE_MEMORY_MS = 60_000;

/** Whether `e` is a plain I/O error (EIO: errno 5 from LMDB, 'EIO' from node:fs, or its message). */
function isIoError(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown } | null;
  if (typeof err !== 'object' || err === null) return false;
  return err.code === 5 || err.code === 'EIO' || (typeof err.message === 'string' && /Input\/output error/.test(err.message));
}

/**
 * Whether the file system holding `path` has almost nothing left (< 1 MiB for an unprivileged
 * writer). The statfs runs on libuv's pool within the disk deadline (disk-deadline.ts), never on
 * the event loop: on a disk that hangs it gives up after SLIPWAY_DISK_TIMEOUT and answers false.
 */
async function nearlyFull(path: string): Promise<boolean> {
  try {
    const fs = await dataDisk.run('a free-space check', statfs(path));
    return fs.bavail * fs.bsize < NEARLY_FULL_BYTES;
  } catch {
    return false;
  }
}

/**
 * `e` itself, or STORAGE_FULL (about `what`) when it is an error for want of space. An I/O error
 * (EIO) counts as one too when a write of this process was refused for want of space within the
 * last minute, or when the file system of `path` (if given) has less than 1 MiB free: a write-back
 * of pages that failed with ENOSPC surfaces as EIO on a later write, fsync or LMDB commit
 * (docs/faults.md "A full data disk").
 * @param what the thing that could not be written, for the message ("the metadata change")
 * @param path a file or directory on the disk written to, for the free-space check of an EIO
 * @returns a SlipwayError `e` unchanged, STORAGE_FULL, or `e` (never throws)
 */
export async function asStorageFull(e: unknown, what: string, path?: string): Promise<unknown> {
  if (isSlipwayError(e)) return e;
  if (isNoSpace(e)) return storageFull(what);
  if (!isIoError(e)) return e;
  if (noSpaceWithin(NO_SPACE_MEMORY_MS) || (path !== undefined && await nearlyFull(path))) return storageFull(what);
  return e;
}

/**
 * Whether a write of this process failed for want of space within the last `ms` milliseconds
 * (an I/O error soon after is the same full disk: a failed write-back surfaces as EIO later).
 */
function noSpaceWithin(ms: number): boolean {
  return performance.now() - lastNoSpaceAt <= ms;
}
