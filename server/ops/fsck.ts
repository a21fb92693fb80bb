/**
 * `slipway fsck`: checks that the store's records and the blob files agree.
 *   - every blob record against its file: present, same size; with `full`, bytes re-hashed on
 *     the calling thread (or `newHash`'s) and compared with the digest
 *   - every blob file has a record (else an orphan file)
 *   - every (repository, manifest) pair: the manifest record exists, each blob it names has a
 *     record and is linked to the repository; blob `refs` and manifest `links` match the pairs
 *   - the link index both ways (`repositoryBlobs` / `blobRepositories`), the image index, every
 *     tag points at a manifest of its repository and the tag index (`manifestTags`) matches
 *   - the store totals (blob and manifest records, their bytes: storage/running-totals.ts) against
 *     the records counted
 *   - upload sessions idle past the upload TTL (stale)
 *   - upload session bytes (the backend's `sessions()`: filesystem `uploads/<id>` files) that
 *     belong to no recorded session (orphan uploads)
 * Repairs (`repair`) only what is safe while serving: orphan files (through the garbage
 * collector's own orphan phase, with its grace period), stale upload sessions (the upload
 * engine's reaper) and orphan upload bytes untouched for the same grace (a running server's
 * session is unrecorded until its first chunk is acknowledged, and its bytes are written
 * meanwhile: the grace keeps them), and store totals that disagree with the records (counted
 * again and set in one transaction, exact however the store changes meanwhile). Everything else is reported for an operator to decide.
 *
 * Reads are not one snapshot across databases: run it on a stopped server or a copy for exact
 * results; while serving, a push committing during the run can show a transient mismatch.
 */
import type { Store } from '../../engine/store.js';
import { blobKey, type BlobBackend } from '../../engine/blobs/contract.js';
import { hashBlob } from '../../engine/blobs/hash-blob.js';
import { blobRecord, checkBlobTotals, resetBlobTotalsInTransaction, scanBlobRecords, scanUploadSessions, uploadSession } from '../../engine/blobs/refs.js';
import type { HashFactory } from '../../engine/blobs/running-hash.js';
import { GarbageCollector } from '../../engine/registry/gc.js';
import { checkRegistryRecords, type RegistryProblemKind } from '../../engine/registry/consistency.js';
import { checkManifestTotals, resetManifestTotalsInTransaction } from '../../engine/registry/registry.js';
import type { Totals } from '../../engine/storage/running-totals.js';
import type { MetadataTransaction } from '../../engine/storage/metadata.js';
import { releaseRetention } from '../../engine/platform/retention.js';
import { Uploads } from '../../engine/blobs/uploads.js';
import type { Clock } from '../../engine/clock.js';
import type { Digest } from '../../engine/digest.js';

/** Kinds of problem, each with the safe repair if there is one. */
export type ProblemKind = 'blob-missing' | 'blob-size' | 'blob-digest' | 'orphan-file' | 'store-totals' | 'stale-upload' | 'orphan-upload' | RegistryProblemKind;

export interface Problem {
  kind: ProblemKind;
  /** What it is about: a digest, `repository@digest`, `repository:tag`, a session id. */
  subject: string;
  detail: string;
  repaired: boolean;
}

export interface FsckReport {
  problems: Problem[];
  /** `sessionFiles`: upload session bytes the backend lists (filesystem: files under `uploads/`). */
  checked: { blobs: number; hashed: number; manifests: number; tags: number; uploads: number; files: number; sessionFiles: number };
}

export interface FsckOptions {
  full: boolean;
  repair: boolean;
  /** Sessions idle longer are stale (ms). */
  uploadTtlMs: number;
  /** Orphan files younger than this are left alone by the repair (ms; the GC grace). */
  orphanGraceMs: number;
  /** Running hashes for `full` (default: on the calling thread). */
  newHash?: HashFactory;
}

/** Parallel hashes with `full` (the worker pool has two threads). */
const HASH_CONCURRENCY = 2;

/**
 * Where a blob whose bytes fail verification (`blob-size`, `blob-digest`) would be repaired:
 * by quarantining its record in the blob engine, so it is no longer served. Not done here yet:
 * fsck reports such blobs and leaves them as they are.
 */
function repairCorruptBlob(_problem: Problem): boolean {
  return false;
}

/**
 * Runs every check on the records of `store` and the bytes of `files` (the blob backend, read
 * only through the blob contract). Never throws for a problem found.
 */
export async function fsck(store: Store, files: BlobBackend, clock: Clock, o: FsckOptions): Promise<FsckReport> {
  const problems: Problem[] = [];
  const add = (kind: ProblemKind, subject: string, detail: string) => {
    const p: Problem = { kind, subject, detail, repaired: false };
    problems.push(p);
    return p;
  };
  const checked = { blobs: 0, hashed: 0, manifests: 0, tags: 0, uploads: 0, files: 0, sessionFiles: 0 };

  // Blob records against their files.
  const toHash: Array<{ digest: Digest; size: number }> = [];
  for await (const { key: digest, value } of scanBlobRecords(store.metadata)) {
    checked.blobs++;
    const d = digest as Digest;
    const size = (await files.stat(d))?.size;
    if (size === undefined) add('blob-missing', d, `recorded (${value.size} bytes) but its file ${blobKey(d)} is missing`);
    else if (size !== value.size) add('blob-size', d, `recorded as ${value.size} bytes, file has ${size}`);
    else if (o.full) toHash.push({ digest: d, size });
  }
  let next = 0;
  await Promise.all(Array.from({ length: HASH_CONCURRENCY }, async () => {
    while (next < toHash.length) {
      const b = toHash[next++]!;
      const got = await hashBlob(files, b.digest, o.newHash);
      checked.hashed++;
      if (got.digest !== b.digest) add('blob-digest', b.digest, `file bytes hash to ${got.digest}`);
    }
  }));
  for (const p of problems) if (o.repair && (p.kind === 'blob-size' || p.kind === 'blob-digest')) p.repaired = repairCorruptBlob(p);

  // Committed blobs without a record.
  const orphans: Problem[] = [];
  for await (const digest of files.list()) {
    checked.files++;
    if (!(await blobRecord(store.metadata, digest))) orphans.push(add('orphan-file', digest, `file ${blobKey(digest)} has no blob record`));
  }

  // Manifests, links, tags and their indexes (the registry's own checks).
  const counted = await checkRegistryRecords(store.metadata, add);
  checked.manifests = counted.manifests;
  checked.tags = counted.tags;

  // The store totals against the records; each with the recount that repairs it.
  const totals: Array<{ problem: Problem; recount: (tx: MetadataTransaction) => Promise<Totals> }> = [];
  const shown = (x: Totals) => `${x.count} records, ${x.bytes} bytes`;
  for (const [subject, check, recount] of [['blobs', checkBlobTotals, resetBlobTotalsInTransaction], ['manifests', checkManifestTotals, resetManifestTotalsInTransaction]] as const) {
    const { recorded, counted } = await check(store.metadata);
    if (recorded.count !== counted.count || recorded.bytes !== counted.bytes) {
      totals.push({ problem: add('store-totals', subject, `totals say ${shown(recorded)}; the records make ${shown(counted)}`), recount });
    }
  }

  // Upload sessions.
  const stale: Problem[] = [];
  const recorded = new Set<string>();
  for await (const { value: rec } of scanUploadSessions(store.metadata)) {
    checked.uploads++;
    recorded.add(rec.id);
    if (clock.now() - rec.updatedAt > o.uploadTtlMs) stale.push(add('stale-upload', rec.id, `idle since ${new Date(rec.updatedAt).toISOString()} (${rec.repository})`));
  }
  // Session bytes without a session record.
  const orphanUploads: Array<{ problem: Problem; node: string; startedAt: Date }> = [];
  for await (const { id, node, startedAt } of files.sessions()) {
    checked.sessionFiles++;
    if (recorded.has(id)) continue;
    const problem = add('orphan-upload', id, `upload session bytes${node ? ` of node ${node}` : ''} with no session record, last written ${startedAt.toISOString()}`);
    orphanUploads.push({ problem, node: node ?? '', startedAt });
  }

  if (o.repair) {
    for (const { problem, recount } of totals) {
      await store.metadata.transact(recount);
      problem.repaired = true;
    }
    if (orphans.length > 0) {
      const gc = new GarbageCollector(store.metadata, files, clock, releaseRetention, { graceMs: o.orphanGraceMs });
      const removed = new Set((await gc.removeOrphans()).map((r) => r.digest as string));
      for (const p of orphans) p.repaired = removed.has(p.subject);
    }
    for (const { problem, node, startedAt } of orphanUploads) {
      if (clock.now() - startedAt.getTime() < o.orphanGraceMs) continue; // maybe a running server's first chunk
      await files.abortSession(problem.subject, node);
      problem.repaired = true;
    }
    if (stale.length > 0) {
      const uploads = new Uploads(store, files, clock, { staleAfterMs: o.uploadTtlMs });
      await uploads.load({ allNodes: true }); // the records only: a running server's live sessions are left alone
      await uploads.reap();
      for (const p of stale) p.repaired = (await uploadSession(store.metadata, p.subject)) === undefined;
    }
  }
  return { problems, checked };
}
