/**
 * What other domains read and change of blob records (keyspace `blobs`) and upload sessions:
 * the registry's reference counts (a blob's `refs` counts the (repository, manifest) pairs naming
 * it, engine/registry/registry.ts), its GC (engine/registry/gc.ts) and the layer scans kept at
 * manifest PUT. Functions named `...InTransaction` compose into the caller's `transact`, so a
 * manifest and the refs of its blobs (or a GC batch and the records it deletes) commit together;
 * the readers take either the store (one read outside a transaction) or a transaction. The
 * blobs domain's own record changes (an upload's commit, quarantine) are here too, so every
 * write of a blob record goes through this file.
 */
import type { Digest } from '../digest.js';
import { prefetch, readMaybe, type MetadataReader, type MetadataStore, type MetadataTransaction, type RecordRef } from '../storage/metadata.js';
import type { MaybePromise } from '../maybe-sync.js';
import { scanKeyspace } from '../storage/scan.js';
import { RunningTotals, type Totals } from '../storage/running-totals.js';
import { blobs, blobTotalsKeyspace, uploads } from './keyspaces.js';
import type { BlobRecord, LayerScan, UploadRecord } from './records.js';

/** The blob records' running totals: every change of a record's existence or size below adds to them. */
const totals = new RunningTotals(blobTotalsKeyspace);

/** The record of `digest` (quarantined ones included), or undefined; at once when `reader` reads synchronously. */
export function blobRecord(reader: MetadataReader, digest: Digest): MaybePromise<BlobRecord | undefined> {
  return readMaybe(reader, blobs, digest);
}

/** The addresses of the records of `digests`, for a `getMany` (what `blobRecord` reads). */
export function blobRecordRefs(digests: readonly Digest[]): Array<RecordRef<BlobRecord>> {
  return digests.map((d) => [blobs, d] as const);
}

/** Every blob record in digest order, paged (outside a transaction; see storage/scan.ts). */
export function scanBlobRecords(reader: MetadataReader): AsyncGenerator<{ key: string; value: BlobRecord }> {
  return scanKeyspace(reader, blobs);
}

/**
 * Adds `delta` (±1) to the refs of each blob in `digests` (a record never goes below 0; digests
 * without a record are skipped); call inside the caller's transaction.
 */
export async function addBlobRefsInTransaction(tx: MetadataTransaction, digests: readonly Digest[], delta: number): Promise<void> {
  // One read of all of them (one round trip on PostgreSQL, whose transaction answers the gets
  // below from it); the gets then see this loop's own writes should a digest repeat.
  await prefetch(tx, blobRecordRefs(digests));
  for (const d of digests) {
    const rec = await tx.get(blobs, d);
    if (rec) tx.put(blobs, d, { ...rec, refs: Math.max(0, rec.refs + delta) });
  }
}

/**
 * Sets the record's `touchedAt` to `now` (GC grace for a blob a client just saw); no-op without
 * a record. Call inside the caller's transaction.
 */
export async function touchBlobInTransaction(tx: MetadataTransaction, digest: Digest, now: number): Promise<void> {
  const rec = await tx.get(blobs, digest);
  if (rec) tx.put(blobs, digest, { ...rec, touchedAt: now });
}

/** Caches layer scans on their blob records (no-op for digests without a record); inside the caller's transaction. */
export async function putLayerScansInTransaction(tx: MetadataTransaction, scans: ReadonlyMap<Digest, LayerScan>): Promise<void> {
  const digests = [...scans.keys()];
  (await tx.getMany(blobRecordRefs(digests))).forEach((rec, i) => {
    if (rec) tx.put(blobs, digests[i]!, { ...rec, scan: scans.get(digests[i]!)! });
  });
}

/**
 * Records `size` verified bytes of `digest`, committed at `now` (ms): creates the record with no
 * references, or heals one that is quarantined or of another size (verified bytes replaced its
 * bytes, the `reuse` rule of blobs/uploads.ts and registry/gc.ts), keeping its references. An
 * intact record with no references is touched (`touchedAt = now`): the client just told 201 gets
 * the GC grace period to reference it, as after a HEAD (registry/gc.ts), also when the record is
 * older than the grace (a layer of a deleted image pushed again). An intact referenced record is
 * left as is. Inside the caller's transaction (an upload's commit, blobs/uploads.ts).
 */
export async function recordVerifiedBlobInTransaction(tx: MetadataTransaction, digest: Digest, size: number, now: number): Promise<void> {
  const existing = await tx.get(blobs, digest);
  if (!existing) {
    tx.put(blobs, digest, { size, createdAt: now, refs: 0 });
    totals.add(tx, 1, size);
  } else if (existing.quarantined || existing.size !== size) {
    tx.put(blobs, digest, { size, createdAt: now, refs: existing.refs });
    totals.add(tx, 0, size - existing.size);
  } else if (existing.refs === 0) tx.put(blobs, digest, { ...existing, touchedAt: now });
}

/**
 * Marks the record of `digest` quarantined with `reason` (cut to 200 characters) unless it is
 * gone, already quarantined, or no longer the record `checked` (same createdAt and size: a
 * verified upload rewrote it meanwhile). Inside the caller's transaction (blobs/quarantine.ts).
 * @returns true when this call quarantined it.
 */
export async function quarantineBlobInTransaction(tx: MetadataTransaction, digest: Digest, reason: string, checked?: BlobRecord): Promise<boolean> {
  const rec = await tx.get(blobs, digest);
  if (!rec || rec.quarantined) return false;
  if (checked && (rec.createdAt !== checked.createdAt || rec.size !== checked.size)) return false;
  tx.put(blobs, digest, { ...rec, quarantined: reason.slice(0, 200) });
  return true;
}

/**
 * Deletes the record of `digest`, which is `record` as read in the same transaction (the file is
 * the caller's to remove after commit); inside the caller's transaction.
 */
export function removeBlobRecordInTransaction(tx: MetadataTransaction, digest: Digest, record: BlobRecord): void {
  tx.remove(blobs, digest);
  totals.add(tx, -1, -record.size);
}

/**
 * Offsets of the live upload sessions: a blob (or orphan file) of such a size may be between an
 * upload's rename and its commit, so GC keeps it (engine/registry/gc.ts). Read inside GC's
 * transaction so a session that reaches its final size conflicts with the batch.
 */
export async function uploadSessionSizes(reader: MetadataReader): Promise<Set<number>> {
  const sizes = new Set<number>();
  for (const { value } of await reader.range(uploads)) sizes.add(value.offset);
  return sizes;
}

/**
 * Blob records (quarantined ones included) and their bytes in total, kept as records change
 * (storage/running-totals.ts: a few small records read, deltas folded when many wait).
 */
export async function blobTotals(store: MetadataStore): Promise<{ blobs: number; bytes: number }> {
  const t = await totals.readAndFold(store);
  return { blobs: t.count, bytes: t.bytes };
}

const blobSize = (record: BlobRecord) => record.size;

/** The blob totals as recorded, and as counted from every record in one pass (`slipway fsck`; not one snapshot while serving). */
export function checkBlobTotals(reader: MetadataReader): Promise<{ recorded: Totals; counted: Totals }> {
  return totals.check(reader, blobs, blobSize);
}

/** Sets the blob totals from every blob record, read in the caller's transaction (schema migration, `slipway fsck --repair`). */
export function resetBlobTotalsInTransaction(tx: MetadataTransaction): Promise<Totals> {
  return totals.recount(tx, blobs, blobSize);
}

/** Every upload session record in id order, paged (outside a transaction; fsck, metrics). */
export function scanUploadSessions(reader: MetadataReader): AsyncGenerator<{ key: string; value: UploadRecord }> {
  return scanKeyspace(reader, uploads);
}

/** The upload session `id`, or undefined (one read). */
export function uploadSession(reader: MetadataReader, id: string): Promise<UploadRecord | undefined> {
  return reader.get(uploads, id);
}

/**
 * Name of the upload sessions' keyspace: node-local state (the session bytes live beside the
 * node's blob backend) that a copy of the store into other stores leaves behind (`slipway
 * migrate`: clients restart uploads in progress).
 */
export const UPLOAD_SESSIONS_KEYSPACE: string = uploads.name;
