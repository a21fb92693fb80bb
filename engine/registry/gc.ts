/**
 * Image retention and online garbage collection (docs/rules.md Limits 7; docs/rules.md Limits 7 (image retention)).
 *
 * A run has three phases, each safe while the registry serves pushes and pulls:
 * 1. Images. An image is a (repository, manifest) pair, aged by the time it was pushed. Pairs in
 *    any of the 20 newest releases of their app are kept (the releases are the platform's: it
 *    gives them as the `ImageRetention` input, engine/platform/retention.ts). Pairs never released go 24 h after
 *    their push; pairs only in older releases go 30 days after it. Each batch is one
 *    transaction that re-checks the pair's push time and that its app has no newer release than
 *    the run saw, then does what DELETE by digest does (`removeManifestInTransaction`, which
 *    finds the image's tags through the manifest → tags index of tags.ts, so a batch costs only
 *    its own images' records, whatever the number of tags in their repositories).
 * 2. Blobs at refs 0. One transaction per batch re-checks each record (refs 0, committed and
 *    last touched more than `graceMs` ago, no upload session of its size) and deletes it with
 *    every repository link of its digest (read from the digest → repositories index, links.ts).
 *    Only after that commit is the file removed: record first, then bytes, so a record never
 *    points at missing bytes.
 * 3. Orphan files (bytes with no record and no session of their size, older than `graceMs`): the
 *    leftovers of a crash between an upload's rename and its commit.
 *
 * Why a push racing GC never loses data (no read-only mode, no lock). Transactions are
 * serializable (engine/storage/metadata.ts), so each GC transaction is ordered against each push
 * transaction, and each re-checks inside its transaction what the other changes:
 * - Manifest PUT re-checks inside its transaction that every blob has a record and a link to
 *   the repository (registry.ts). If GC's transaction came first, the PUT fails with
 *   MANIFEST_BLOB_UNKNOWN and stores nothing (the client pushes the blob again); if the PUT came
 *   first, the blob's refs is above 0 and GC's re-check keeps it. The grace period (and the
 *   touch of an unreferenced blob on HEAD/GET/mount) makes that failure rare: a client that just
 *   uploaded or checked a blob has `graceMs` to reference it.
 * - Blob upload: the session records its final size before the bytes are made visible under
 *   the digest (the blob contract's commit, engine/blobs/contract.ts), and one transaction later
 *   creates (or reuses) the record, links it and deletes the session. GC keeps any unreferenced
 *   blob or orphan file whose size equals the offset of a live session, so between the
 *   backend's commit and the transaction the bytes are untouchable whatever the grace.
 * - Dedupe: the upload's commit reuses committed bytes only when their record exists
 *   (`CommitOptions.reuse`, answered by engine/blobs/uploads.ts from the record, read after the
 *   session reached its final size, so GC keeps that record until the upload's transaction).
 *   With no record the backend puts the upload's own verified bytes in place even if a copy is
 *   there (the filesystem: an atomic rename over it), because that copy may be one GC is about
 *   to remove.
 * - Byte removal: GC notes the blob's version (`BlobStat.version`, the inode on the filesystem)
 *   before its transaction, and deletes through the blob contract only that version
 *   (engine/blobs/contract.ts `delete(digest, ifVersion)`): another version is an upload's fresh
 *   copy (committed after GC's transaction) and stays. What a crash interrupts is settled by the
 *   backend's `recover` at the next run (or start), which puts back bytes a record needs.
 * This needs every upload to go through Uploads (engine/blobs/uploads.ts), which gives the
 * record-based `reuse` to every commit; a commit with the contract's default (reuse whatever is
 * there) is not safe against online GC.
 * What can still fail, by design, and never loses an accepted manifest: a manifest PUT whose
 * blob GC took first (the grace period passed, or the blob was referenced when the client
 * HEADed it and lost its last reference since) gets MANIFEST_BLOB_UNKNOWN, also when GC took
 * it while the worker was reading it (and when it was pushed again meanwhile and a second
 * inspection still misses it: registry.ts `#inspectPushed`); a GET of a blob during the microseconds its file is in
 * the trash before being put back can fail once.
 * Time: record ages come from the injectable clock; an orphan's age is clock time minus mtime.
 */
import type { BlobBackend, BlobStat } from '../blobs/contract.js';
import { performance } from 'node:perf_hooks';
import type { Digest } from '../digest.js';
import { key, KEY_SEPARATOR, prefetch, type MetadataReader, type MetadataStore } from '../storage/metadata.js';
import { scanKeyspace } from '../storage/scan.js';
import type { Clock } from '../clock.js';
import { blobRecord, blobRecordRefs, removeBlobRecordInTransaction, scanBlobRecords, uploadSessionSizes } from '../blobs/refs.js';
import { publishEvent, type GcEvent } from '../events.js';
import { removeManifestInTransaction } from './registry.js';
import { unlinkEverywhereInTransaction } from './links.js';
import { manifests, repositories, repositoryManifests } from './keyspaces.js';
import { nameReferrers } from './gc-explain.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/** Retention rule and GC settings. Defaults: docs/rules.md Limits 7 (24 h, 30 days, 20 releases), grace 1 h. */
export interface GcOptions {
  /** Change nothing; report what would be deleted. */
  dryRun: boolean;
  /** An unreferenced blob (or orphan file) committed or touched less than this ago is kept (ms). */
  graceMs: number;
  /** Images never released are deleted this long after their push (ms). Spec: one day. */
  unreleasedMs: number;
  /** Images only in releases older than the `keepReleases` newest go this long after their push (ms). Spec: 30 days. */
  releasedMs: number;
  /** Newest releases per app whose images are always kept. Spec: 20. */
  keepReleases: number;
  /** Images deleted per transaction; blobs go 4 times as many at a time (see #blobs). */
  batchSize: number;
  /**
   * Stops the run before its next batch when aborted (its reason is thrown): the scheduler's
   * exclusive lock was lost (MetadataStore.exclusive), so another node may start a run.
   */
  signal?: AbortSignal;
}

export const DEFAULT_GC_OPTIONS: GcOptions = {
  dryRun: false, graceMs: HOUR, unreleasedMs: DAY, releasedMs: 30 * DAY, keepReleases: 20, batchSize: 256,
};

/**
 * Why a dry run keeps a blob (or an orphan file): `referenced` by a manifest that stays
 * (`referencedBy`: up to three `repository@manifest digest`, `references`: how many images in
 * all); `grace`: unreferenced, uploaded or last checked at `since`, kept until `until` (ms since
 * epoch); `upload`: an upload session has reached its size, so the bytes may be that upload's
 * (engine/registry/gc.ts "Blob upload").
 */
export type KeptBlob = { digest: string; size: number } & (
  | { reason: 'referenced'; referencedBy: string[]; references: number }
  | { reason: 'grace'; since: number; until: number }
  | { reason: 'upload' });

/** What a run deleted (or, dry, would delete), with the `slipway:gc` summary. */
export interface GcReport extends GcEvent {
  /** The grace period the run used, ms. */
  graceMs: number;
  deletedImages: Array<{ repository: string; digest: string; reason: 'unreleased' | 'expired'; pushedAt: number }>;
  deletedBlobs: Array<{ digest: string; size: number }>;
  deletedOrphans: Array<{ digest: string; size: number }>;
  /** Dry runs only (empty otherwise): every blob record kept, and why. */
  keptBlobs: KeptBlob[];
  /** Dry runs only: blob files without a record that were kept (never `referenced`), and why. */
  keptOrphans: KeptBlob[];
}

/** What the releases retain, as the platform saw them at the start of a run. */
export interface RetainedImages {
  /** `repository␟manifest digest` of images in any of their app's `keepReleases` newest releases. */
  recent: Set<string>;
  /** Images only in older releases. */
  released: Set<string>;
  /** app id → opaque token (key) of its newest release. */
  newest: Map<string, string>;
}

/**
 * The retention input GC takes from the platform (engine/platform/retention.ts implements it):
 * the registry reads no release itself.
 */
export interface ImageRetention {
  /** Scans the releases (outside a transaction). */
  retainedImages(reader: MetadataReader, keepReleases: number): Promise<RetainedImages>;
  /** Token of the app's newest release now; GC calls it inside its transaction to re-check. */
  newestRelease(reader: MetadataReader, appId: string): Promise<string | undefined>;
}

interface ImageCandidate { repository: string; digest: Digest; pushedAt: number; appId: string | undefined; reason: 'unreleased' | 'expired' }

function emptyReport(dryRun: boolean, startedAt: number, graceMs: number): GcReport {
  return {
    dryRun, startedAt, durationMs: 0, graceMs,
    images: { unreleased: 0, expired: 0, kept: 0 }, blobs: { deleted: 0, bytes: 0, kept: 0 }, orphans: { deleted: 0, bytes: 0 },
    deletedImages: [], deletedBlobs: [], deletedOrphans: [], keptBlobs: [], keptOrphans: [],
  };
}

export class GarbageCollector {
  readonly options: GcOptions;

  /**
   * @param metadata the metadata store (registry records, blob records through engine/blobs/refs.ts)
   * @param blobs the blob bytes (the blob contract)
   * @param retention what the releases keep (the platform's `releaseRetention`)
   */
  constructor(readonly metadata: MetadataStore, readonly blobs: BlobBackend, readonly clock: Clock, readonly retention: ImageRetention, options: Partial<GcOptions> = {}) {
    this.options = { ...DEFAULT_GC_OPTIONS, ...options };
  }

  /**
   * One full run: images by the retention rule, then unreferenced blobs, then orphan files.
   * Publishes the summary on `slipway:gc`. `overrides` apply to this run only (e.g. dryRun).
   */
  async run(overrides: Partial<GcOptions> = {}): Promise<GcReport> {
    const o = { ...this.options, ...overrides };
    const t0 = performance.now();
    const startedAt = this.clock.now();
    const report = emptyReport(o.dryRun, startedAt, o.graceMs);
    if (!o.dryRun) await this.recoverTrash();
    const refsAfter = await this.#images(o, startedAt, report);
    o.signal?.throwIfAborted();
    await this.#blobs(o, startedAt, report, refsAfter);
    if (o.dryRun) await nameReferrers(this.metadata, report);
    o.signal?.throwIfAborted();
    await this.#orphans(o, startedAt, report);
    report.durationMs = Math.round((performance.now() - t0) * 10) / 10;
    publishEvent('gc', () => ({ dryRun: report.dryRun, startedAt, durationMs: report.durationMs, images: report.images, blobs: report.blobs, orphans: report.orphans }));
    return report;
  }

  /** Phase 1. Returns, for a dry run, the refs blobs would have after the deletions. */
  async #images(o: GcOptions, now: number, report: GcReport): Promise<Map<string, number>> {
    const { recent, released, newest } = await this.retention.retainedImages(this.metadata, o.keepReleases);
    const candidates: ImageCandidate[] = [];
    for await (const { key: k, value: pushedAt } of scanKeyspace(this.metadata, repositoryManifests)) {
      const cut = k.lastIndexOf(KEY_SEPARATOR);
      const repository = k.slice(0, cut);
      const reason = recent.has(k) ? undefined : released.has(k) ? 'expired' : 'unreleased';
      if (reason && now - pushedAt > (reason === 'expired' ? o.releasedMs : o.unreleasedMs)) {
        candidates.push({ repository, digest: k.slice(cut + 1) as Digest, pushedAt, reason, appId: (await this.metadata.get(repositories, repository))?.appId });
      } else {
        report.images.kept++;
      }
    }
    const refsAfter = new Map<string, number>();
    for (let i = 0; i < candidates.length; i += o.batchSize) {
      o.signal?.throwIfAborted();
      const batch = candidates.slice(i, i + o.batchSize);
      let done: ImageCandidate[] = [];
      if (o.dryRun) {
        done = batch;
        for (const c of batch) {
          for (const b of (await this.metadata.get(manifests, c.digest))?.blobs ?? []) {
            refsAfter.set(b, (refsAfter.get(b) ?? (await blobRecord(this.metadata, b))?.refs ?? 0) - 1);
          }
        }
      } else {
        done = await this.metadata.transact(async (tx) => {
          const removed: ImageCandidate[] = [];
          // The batch's pairs and manifest records in one read (one round trip on PostgreSQL).
          await prefetch(tx, batch.flatMap((c) => [[repositoryManifests, key(c.repository, c.digest)], [manifests, c.digest]] as const));
          for (const c of batch) {
            // Re-check: same push (not deleted and pushed again) and no release since the scan.
            if ((await tx.get(repositoryManifests, key(c.repository, c.digest))) !== c.pushedAt) continue;
            if (c.appId !== undefined && (await this.retention.newestRelease(tx, c.appId)) !== newest.get(c.appId)) continue;
            if (await removeManifestInTransaction(tx, c.repository, c.digest)) removed.push(c);
          }
          return removed;
        });
      }
      report.images.kept += batch.length - done.length;
      for (const c of done) {
        report.images[c.reason]++;
        report.deletedImages.push({ repository: c.repository, digest: c.digest, reason: c.reason, pushedAt: c.pushedAt });
      }
    }
    return refsAfter;
  }

  /** Phase 2: blob records at refs 0 past the grace period, then their files. */
  async #blobs(o: GcOptions, now: number, report: GcReport, refsAfter: Map<string, number>): Promise<void> {
    const candidates: Digest[] = [];
    for await (const { key: d, value: rec } of scanBlobRecords(this.metadata)) {
      const refs = refsAfter.get(d) ?? rec.refs;
      const since = Math.max(rec.createdAt, rec.touchedAt ?? 0);
      if (refs > 0) {
        if (o.dryRun) report.keptBlobs.push({ digest: d, size: rec.size, reason: 'referenced', referencedBy: [], references: 0 });
        continue;
      }
      if (now - since >= o.graceMs) candidates.push(d as Digest);
      else {
        report.blobs.kept++;
        if (o.dryRun) report.keptBlobs.push({ digest: d, size: rec.size, reason: 'grace', since, until: since + o.graceMs });
      }
    }
    // A blob's links are found through the digest → repositories index (links.ts), so each
    // transaction costs only its own blobs' records and links, whatever the store's size.
    const size = o.batchSize * 4;
    for (let i = 0; i < candidates.length; i += size) {
      o.signal?.throwIfAborted();
      const batch = candidates.slice(i, i + size);
      if (o.dryRun) {
        const busy = await uploadSessionSizes(this.metadata);
        for (const d of batch) {
          const size = (await blobRecord(this.metadata, d))?.size ?? 0;
          if (busy.has(size)) { report.blobs.kept++; report.keptBlobs.push({ digest: d, size, reason: 'upload' }); continue; }
          report.blobs.deleted++;
          report.blobs.bytes += size;
          report.deletedBlobs.push({ digest: d, size });
        }
        continue;
      }
      const stats = new Map<Digest, BlobStat | undefined>();
      await inParallel(batch, 16, async (d) => { stats.set(d, await this.blobs.stat(d)); });
      // The body only reads and writes records; bytes go after the commit (#removeBytes).
      const deleted = await this.metadata.transact(async (tx) => {
        const busy = await uploadSessionSizes(tx);
        await prefetch(tx, blobRecordRefs(batch)); // the batch's records in one read (one round trip on PostgreSQL)
        const gone: Array<{ digest: Digest; size: number }> = [];
        for (const d of batch) {
          const rec = await blobRecord(tx, d);
          if (!rec || rec.refs > 0 || now - Math.max(rec.createdAt, rec.touchedAt ?? 0) < o.graceMs || busy.has(rec.size)) continue;
          removeBlobRecordInTransaction(tx, d, rec);
          await unlinkEverywhereInTransaction(tx, d);
          gone.push({ digest: d, size: rec.size });
        }
        return gone;
      });
      report.blobs.kept += batch.length - deleted.length;
      await inParallel(deleted, 16, async (b) => {
        const freed = (await this.#removeBytes(stats.get(b.digest))) ?? 0;
        report.blobs.deleted++;
        report.blobs.bytes += freed;
        report.deletedBlobs.push({ digest: b.digest, size: freed });
      });
    }
  }

  /**
   * Phase 3 alone: deletes blob files without a record, older than the grace and matching no
   * upload session (what `slipway fsck --repair` does for orphan files). Safe while serving.
   */
  async removeOrphans(overrides: Partial<GcOptions> = {}): Promise<GcReport['deletedOrphans']> {
    const o = { ...this.options, ...overrides };
    const report = emptyReport(o.dryRun, this.clock.now(), o.graceMs);
    if (!o.dryRun) await this.recoverTrash();
    await this.#orphans(o, report.startedAt, report);
    return report.deletedOrphans;
  }

  /** Phase 3: committed blobs (the backend's `list`) with no record and no matching session, older than the grace. */
  async #orphans(o: GcOptions, now: number, report: GcReport): Promise<void> {
    const found: BlobStat[] = [];
    for await (const digest of this.blobs.list()) {
      if (await blobRecord(this.metadata, digest)) continue; // the common case: one read
      const st = await this.blobs.stat(digest);
      const since = st?.modifiedAt?.getTime() ?? now;
      if (st && now - since >= o.graceMs) found.push(st);
      else if (st && o.dryRun) report.keptOrphans.push({ digest, size: st.size, reason: 'grace', since, until: since + o.graceMs });
      if (found.length >= 256) await this.#removeOrphans(o, found.splice(0), report);
    }
    await this.#removeOrphans(o, found, report);
  }

  async #removeOrphans(o: GcOptions, found: BlobStat[], report: GcReport): Promise<void> {
    if (found.length === 0) return;
    // Read after the stats: bytes an upload is committing have a record or a session of their size.
    const busy = await uploadSessionSizes(this.metadata);
    for (const f of found) {
      if (await blobRecord(this.metadata, f.digest)) continue;
      if (busy.has(f.size)) {
        if (o.dryRun) report.keptOrphans.push({ digest: f.digest, size: f.size, reason: 'upload' });
        continue;
      }
      const freed = o.dryRun ? f.size : await this.#removeBytes(f);
      if (freed === undefined) continue;
      report.orphans.deleted++;
      report.orphans.bytes += freed;
      report.deletedOrphans.push({ digest: f.digest, size: freed });
    }
  }

  /**
   * Deletes a blob's bytes if they are still the version `seen` (stat before the record was
   * deleted); another version is an upload's fresh copy and stays. Returns bytes freed.
   */
  async #removeBytes(seen: BlobStat | undefined): Promise<number | undefined> {
    if (!seen) return undefined;
    return (await this.blobs.delete(seen.digest, seen.version)) ? seen.size : undefined;
  }

  /** Settles deletes a crash interrupted (the backend's `recover`): recorded blobs come back. */
  async recoverTrash(): Promise<void> {
    await this.blobs.recover?.(async (digest) => (await blobRecord(this.metadata, digest)) !== undefined);
  }
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function inParallel<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}
