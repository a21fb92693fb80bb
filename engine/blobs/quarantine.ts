/**
 * Blob verification and quarantine: the check that a stored blob's bytes are what its record
 * says (size, and sha256 equal to the digest), and what happens when they are not.
 *
 * A quarantined record (`BlobRecord.quarantined`, the reason) stays in the store with its
 * references, but every reader treats the blob as unknown (registry/links.ts `linkedBlob`): GET
 * and HEAD answer BLOB_UNKNOWN so clients push it again, a manifest naming it gets
 * MANIFEST_BLOB_UNKNOWN, a mount falls back to an upload, and an upload of the digest is never
 * deduplicated onto it (blobs/uploads.ts `#reusable`, registry/gc.ts): the verified upload's
 * bytes replace the file and its commit rewrites the record (blobs/uploads.ts), which heals it.
 *
 * Used three ways: on every blob GET (`sizeCheck`: one stat on libuv's pool) and HEAD
 * (`headSizeCheck`: the same, or a check of that blob passed within the last second), once at
 * start-up for blobs written by a build before store schema 6 (`LegacyBlobCheck`: size, then
 * sha256 in the worker pool), and on demand by operators' tools (`verifyBlob` + `quarantineBlob`).
 */
import type { Digest } from '../digest.js';
import { dataDisk } from '../storage/disk-deadline.js';
import type { MetadataStore } from '../storage/metadata.js';
import { meta } from '../storage/meta-keyspace.js';
import type { BlobBackend, BlobStat } from './contract.js';
import type { BlobRecord } from './records.js';
import type { BlobHasher } from './hash-blob.js';
import { LEGACY_CHECK_KEY } from './migrations.js';
import { blobRecord, quarantineBlobInTransaction, scanBlobRecords } from './refs.js';

/** Outcome of a check: ok, or the reason the bytes are not the record's. */
export type BlobCheck = { ok: true } | { ok: false; reason: string };


/**
 * Checks one blob's bytes against `rec` (its record): the backend has them, `rec.size` bytes;
 * with `hasher`, also that their sha256 is `digest` (reads every byte through the contract,
 * hash-blob.ts). Never throws for a bad blob; I/O errors other than a missing blob are thrown.
 */
export async function verifyBlob(blobs: BlobBackend, digest: Digest, rec: BlobRecord, hasher?: BlobHasher): Promise<BlobCheck> {
  const check = checkSize(await blobs.stat(digest), rec);
  if (!check.ok || !hasher) return check;
  const hashed = await hasher(digest);
  if (hashed.digest !== digest) return { ok: false, reason: `bytes hash to ${hashed.digest}` };
  if (hashed.size !== rec.size) return { ok: false, reason: `hashed ${hashed.size} bytes, record says ${rec.size}` };
  return { ok: true };
}

/**
 * Quarantines a blob's record with `reason`, in one transaction that re-reads it: nothing
 * happens when the record is gone, already quarantined, or no longer the one checked (`checked`:
 * a verified upload rewrote it meanwhile, so its createdAt differs).
 * @returns true when the record was quarantined by this call.
 */
export function quarantineBlob(metadata: MetadataStore, digest: Digest, reason: string, checked?: BlobRecord): Promise<boolean> {
  return metadata.transact((tx) => quarantineBlobInTransaction(tx, digest, reason, checked));
}

/**
 * The size check before a blob is served: the backend's stat of the bytes against the record.
 * On a local medium (`statsLocally`, the filesystem) the stat runs on libuv's pool within the
 * disk deadline (storage/disk-deadline.ts), never on the event loop: on a data disk that hangs
 * the request answers STORAGE_STALLED (503) after SLIPWAY_DISK_TIMEOUT while the rest of the
 * process keeps serving (docs/faults.md "A data disk that hangs").
 * @throws STORAGE_STALLED when the stat does not complete within the deadline
 */
export function sizeCheck(blobs: BlobBackend, digest: Digest, rec: BlobRecord): Promise<BlobCheck> {
  const stat = blobs.stat(digest);
  return (blobs.statsLocally ? dataDisk.run('a stat of a blob file', stat) : stat).then((st) => checkSize(st, rec));
}

/**
 * How long a passed size check also answers the HEADs of the same blob (same recorded size)
 * without a new stat, ms of the process's monotonic clock. A file that vanishes or changes size
 * behind the server's back is therefore answered 200 by HEAD for at most this long after the last
 * check that passed; a GET always checks (docs/storage.md "Pulls").
 */
export const HEAD_CHECK_REUSE_MS = 1000;

/** Most blobs whose last passed check is remembered per backend (bounded memory). */
const REMEMBERED_CHECKS = 10_000;

interface PassedCheck { size: number; at: number }
const passedChecks = new WeakMap<BlobBackend, Map<string, PassedCheck>>();

/**
 * `sizeCheck` for a HEAD: a check of the same blob and recorded size that passed less than
 * `HEAD_CHECK_REUSE_MS` ago (`nowMs`: `performance.now()`) is reused (answered synchronously, no
 * I/O); otherwise the stat is made and, when it passes, remembered.
 */
export function headSizeCheck(blobs: BlobBackend, digest: Digest, rec: BlobRecord, nowMs: number): BlobCheck | Promise<BlobCheck> {
  let passed = passedChecks.get(blobs);
  if (passed === undefined) passedChecks.set(blobs, (passed = new Map()));
  const last = passed.get(digest);
  if (last !== undefined && last.size === rec.size && nowMs >= last.at && nowMs - last.at < HEAD_CHECK_REUSE_MS) return PASSED;
  const remember = (check: BlobCheck): BlobCheck => {
    if (!check.ok) passed.delete(digest);
    else if (last !== undefined) { last.size = rec.size; last.at = nowMs; }
    else {
      if (passed.size >= REMEMBERED_CHECKS) passed.clear();
      passed.set(digest, { size: rec.size, at: nowMs });
    }
    return check;
  };
  return sizeCheck(blobs, digest, rec).then(remember);
}

const PASSED: BlobCheck = Object.freeze({ ok: true });

function checkSize(st: BlobStat | undefined, rec: BlobRecord): BlobCheck {
  if (st === undefined) return { ok: false, reason: 'file missing' };
  return st.size === rec.size ? PASSED : { ok: false, reason: `file has ${st.size} bytes, record says ${rec.size}` };
}

/** What the start-up pass found. */
export interface LegacyCheckReport {
  checked: number;
  quarantined: Array<{ digest: string; reason: string }>;
}

/**
 * The one-time verification of blobs written before store schema 6 (builds that could record a
 * blob whose bytes disagree with it). `sizes()` stats every listed blob before the server serves
 * (one stat each; a clean or new store skips everything after one meta read); `hashes()` then
 * reads every byte in the worker pool, two at a time, while the server runs, and clears the
 * meta key when done (a restart before that starts the pass over). `pending(digest)` is the
 * verification a GET must wait for, if that blob's turn has not come yet.
 */
export class LegacyBlobCheck {
  readonly report: LegacyCheckReport = { checked: 0, quarantined: [] };
  readonly #queue: Digest[] = [];
  readonly #running = new Map<Digest, Promise<void>>();
  readonly #done = new Set<Digest>();

  /** @param hasher re-hashes a blob of `blobs` (hash-blob.ts `blobHasher`). */
  constructor(readonly metadata: MetadataStore, readonly blobs: BlobBackend, readonly hasher: BlobHasher) {}

  /** True when blobs of an older build await verification (one meta read). */
  async needed(): Promise<boolean> {
    return (await this.metadata.get(meta, LEGACY_CHECK_KEY)) === true;
  }

  /** Size check of every blob (before serving); queues the blobs that passed for hashing. */
  async sizes(): Promise<void> {
    if (!(await this.needed())) return;
    for await (const { key, value: rec } of scanBlobRecords(this.metadata)) {
      const digest = key as Digest;
      if (rec.quarantined) continue;
      const check = await verifyBlob(this.blobs, digest, rec);
      if (check.ok) this.#queue.push(digest);
      else await this.#quarantine(digest, check.reason, rec);
    }
  }

  /** Hashes every queued blob (two at a time), then marks the store verified. */
  async hashes(): Promise<LegacyCheckReport> {
    if (!(await this.needed())) return this.report;
    const worker = async () => {
      for (let d = this.#queue.shift(); d; d = this.#queue.shift()) await this.verify(d);
    };
    await Promise.all([worker(), worker()]);
    await this.metadata.transact((tx) => tx.remove(meta, LEGACY_CHECK_KEY));
    return this.report;
  }

  /** The verification of `digest` if it still awaits one (started now if queued), else undefined. */
  pending(digest: Digest): Promise<void> | undefined {
    if (this.#done.has(digest) || (!this.#running.has(digest) && !this.#queue.includes(digest))) return undefined;
    return this.verify(digest);
  }

  /** Verifies one queued blob by sha256 (once). */
  verify(digest: Digest): Promise<void> {
    const running = this.#running.get(digest);
    if (running) return running;
    const i = this.#queue.indexOf(digest);
    if (i >= 0) this.#queue.splice(i, 1);
    const p = (async () => {
      const rec = await blobRecord(this.metadata, digest);
      if (rec && !rec.quarantined) {
        const check = await verifyBlob(this.blobs, digest, rec, this.hasher).catch((e: Error) => ({ ok: false as const, reason: `unreadable: ${e.message}` }));
        this.report.checked++;
        if (!check.ok) await this.#quarantine(digest, check.reason, rec);
      }
      this.#done.add(digest);
      this.#running.delete(digest);
    })();
    this.#running.set(digest, p);
    return p;
  }

  async #quarantine(digest: Digest, reason: string, rec: BlobRecord): Promise<void> {
    if (await quarantineBlob(this.metadata, digest, reason, rec)) this.report.quarantined.push({ digest, reason });
  }
}
