/**
 * Manifests, tags, repositories and the image-id index (distribution spec "Pulling manifests",
 * "Pushing manifests", "Content discovery", "Deleting"). Blob bytes are the blob backend's and blob
 * records the blobs domain's (engine/blobs/refs.ts); this service keeps the registry's records
 * over the metadata contract (engine/storage/metadata.ts), each change in one transaction. Reads
 * that serve pulls (manifest GET/HEAD, blob HEAD) run outside transactions, one `get` per record.
 * Tags are written only through tags.ts, which keeps the manifest → tags index in the same
 * transaction.
 *
 * Reference counting: a blob's `refs` is the number of (repository, manifest) pairs naming it;
 * it changes in the same transaction that adds or removes the pair, and GC deletes only blobs
 * at zero refs (after a grace period: engine/registry/gc.ts, whose header explains why a push
 * racing GC can fail with MANIFEST_BLOB_UNKNOWN but never store a manifest without its blobs).
 */
import { digestOf, isDigest, type Digest } from '../digest.js';
import { fail, isSlipwayError } from '../errors.js';
import { key, prefetch, readMaybe, type MetadataReader, type MetadataStore, type MetadataTransaction } from '../storage/metadata.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';
import type { Clock } from '../clock.js';
import type { BlobBackend } from '../blobs/contract.js';
import type { BlobRecord } from '../blobs/records.js';
import { addBlobRefsInTransaction, blobRecord, touchBlobInTransaction } from '../blobs/refs.js';
import { parseManifest } from './manifest-parse.js';
import { MANIFEST_V2S2 } from './media-types.js';
import { parseReference } from './names.js';
import { linkedBlob, linkedBlobRefs, linkedBlobs, linkedFrom, linkBlobInTransaction, unlinkBlobInTransaction, unlinkRangeInTransaction } from './links.js';
import { putTagInTransaction, removeTagInTransaction, removeTagsOfRepositoryInTransaction, tagPage, taggedDigest, taggedManifest, tagRef, type TaggedManifest } from './tags.js';
import { manifestBytes, type ImageInfo, type ManifestRecord, type RepositoryRecord } from './records.js';
import { images, manifests, repositories, repositoryManifests } from './keyspaces.js';
import { ManifestContentCache, type ManifestContent } from './content-cache.js';
import { checkIdentifier } from '../identifiers.js';
import { recordImageEvent } from './events.js';
import { appOfRepository, appRepositoryRange, requireNameHeld, type AppNameRef } from './rename.js';
import { newId } from '../identity/tokens.js';
import { BLOB_MEDIA_TYPE, type EventOrigin, type EventSubject } from '../notifications/envelope.js';
import type { ChangeRecorder } from '../notifications/registry-notifications.js';
import { inspectImage, type ImageInspector } from './image-inspection.js';
import { holdsManifest, manifestStoredInTransaction, removeManifestInTransaction } from './manifest-records.js';

export type { ImageInspector, InspectRequest, InspectResult } from './image-inspection.js';
export { checkManifestTotals, holdsManifest, manifestTotals, removeManifestInTransaction, resetManifestTotalsInTransaction } from './manifest-records.js';

/** The origin of a change made outside a client's request (a test, a tool): no request, no actor. */
const NO_ORIGIN: EventOrigin = { request: { id: '', method: '', useragent: '' }, actor: {} };

/** Largest manifest accepted (bytes); the OCI spec asks registries to take at least 4 MiB. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

/** A page of names plus the `last` value for the next page, when there is one. */
export interface Page {
  items: string[];
  next?: string;
}

export class Registry {
  /**
   * Minimum ms between two writes of `touchedAt` on one unreferenced blob (HEAD/GET/mount keep
   * it from GC for the grace period). The hot path writes nothing for referenced blobs and at
   * most one small transaction per unreferenced blob per this interval. server/main.ts sets it
   * to a quarter of the GC grace period, at most 5 minutes.
   */
  touchEveryMs = 5 * 60_000;
  readonly #touching = new Set<string>();
  readonly #contents = new ManifestContentCache();
  /**
   * Registry notifications (engine/notifications/registry-notifications.ts): when set, a manifest
   * push, a manifest or tag delete and a blob mount record their event in their own transaction.
   */
  notifications?: ChangeRecorder;
  /**
   * When set (server/main.ts), a manifest PUT and a mount check in their transaction that the
   * app still holds the repository's name (rename.ts `AppNameRef`): a push ordered after a
   * rename of its app fails with NAME_UNKNOWN instead of writing under the old name. Absent
   * (engine tests): not checked.
   */
  appNameRef?: AppNameRef;

  constructor(
    readonly metadata: MetadataStore,
    readonly blobs: BlobBackend,
    readonly clock: Clock,
    readonly inspect: ImageInspector,
  ) {}

  /**
   * A blob `repository` may serve (two reads outside a transaction; synchronous when the store
   * reads synchronously, engine/maybe-sync.ts).
   * @throws BLOB_UNKNOWN when absent, quarantined or not linked to the repository.
   */
  statBlob(repository: string, digest: Digest): MaybePromise<BlobRecord> {
    return andThen(linkedBlob(this.metadata, repository, digest), (rec) => {
      if (!rec) throw fail('BLOB_UNKNOWN', 'blob unknown to registry', { digest });
      if (rec.refs === 0) this.#touch(digest, rec);
      return rec;
    });
  }

  /** True when `at` is at least `touchEveryMs` after the blob was committed or last touched. */
  #touchDue(rec: BlobRecord, at: number): boolean {
    return at - Math.max(rec.createdAt, rec.touchedAt ?? 0) >= this.touchEveryMs;
  }

  /**
   * Records that a client showed interest in an unreferenced blob (GC grace), without blocking:
   * one transaction that re-reads the record (never overwrites a concurrent refs change).
   */
  #touch(digest: Digest, rec: BlobRecord): void {
    const now = this.clock.now();
    if (!this.#touchDue(rec, now) || this.#touching.has(digest)) return;
    this.#touching.add(digest);
    this.metadata.transact(async (tx) => {
      const cur = await blobRecord(tx, digest);
      if (cur && cur.refs === 0) await touchBlobInTransaction(tx, digest, now);
    }).catch(() => undefined).finally(() => this.#touching.delete(digest));
  }

  /**
   * Links a blob of `from` into `to` (cross-repository mount). Returns undefined when `from` lacks it.
   * @param origin who mounts (the `mount` notification's request and actor)
   * @param appId the app owning `to` (checked to still hold the name with `appNameRef`)
   * @throws NAME_UNKNOWN when that app no longer holds the name (renamed meanwhile)
   */
  async mount(from: string, to: string, digest: Digest, origin = NO_ORIGIN, appId?: string): Promise<BlobRecord | undefined> {
    if (!(await linkedBlob(this.metadata, from, digest))) return undefined;
    const now = this.clock.now();
    return this.metadata.transact(async (tx) => {
      if (this.appNameRef && appId !== undefined) await requireNameHeld(tx, this.appNameRef(appOfRepository(to)), to, appId);
      const rec = await blobRecord(tx, digest);
      if (!rec || rec.quarantined) return undefined;
      await linkBlobInTransaction(tx, to, digest, now);
      // A mount is followed by a manifest PUT: keep the blob from GC for its grace period.
      if (this.#touchDue(rec, now)) await touchBlobInTransaction(tx, digest, now);
      await this.#record(tx, { action: 'mount', kind: 'blob', repository: to, fromRepository: from, digest, mediaType: BLOB_MEDIA_TYPE, size: rec.size }, origin);
      return rec;
    });
  }

  /**
   * Removes a blob from a repository (the bytes stay until GC finds them unreferenced).
   * @throws BLOB_UNKNOWN when the repository does not link it.
   */
  async unlinkBlob(repository: string, digest: Digest): Promise<void> {
    await this.statBlob(repository, digest);
    await this.metadata.transact((tx) => unlinkBlobInTransaction(tx, repository, digest));
  }

  /**
   * Stores a manifest under a tag or its digest.
   * A layer whose scan hits a limit does not fail the PUT: the image carries a warning
   * (engine/registry/inspect-limits.ts).
   * @param appId the app that owns `repository` (already authorised by the caller)
   * @param account the pushing account, whose share of the worker pool the inspection uses
   * @param origin who pushes (the `push` notification's request and actor)
   * @throws MANIFEST_INVALID, MANIFEST_BLOB_UNKNOWN, DIGEST_INVALID, UNSUPPORTED_ARCHITECTURE;
   *         NAME_UNKNOWN when the app was renamed meanwhile (`appNameRef`)
   */
  async putManifest(repository: string, appId: string, reference: string, bytes: Uint8Array, contentType: string | undefined, account = '', origin = NO_ORIGIN): Promise<Digest> {
    const digest = digestOf(bytes);
    const tag = this.#tagOrDigest(reference, digest);
    const parsed = parseManifest(bytes, contentType);
    // One read of every blob's link and record and of the manifest's record (one round trip).
    const descriptors = [parsed.config, ...parsed.layers];
    const read = await this.metadata.getMany([...linkedBlobRefs(repository, descriptors.map((d) => d.digest)), [manifests, digest]]);
    const found = linkedFrom(read, descriptors.length);
    descriptors.forEach((d, i) => {
      const blob = found[i];
      if (!blob) throw fail('MANIFEST_BLOB_UNKNOWN', `blob unknown to registry: ${d.digest} is referenced by the manifest but was not pushed to ${repository}`, { digest: d.digest });
      if (blob.size !== d.size) throw fail('MANIFEST_INVALID', `descriptor size ${d.size} of ${d.digest} does not match the blob's ${blob.size} bytes`, { digest: d.digest });
    });
    const existing = read[read.length - 1] as ManifestRecord | undefined;
    const image = existing?.image ?? (await this.#inspectPushed(repository, parsed.config.digest, parsed.layers.map((l) => l.digest), parsed.blobs, account));
    const now = this.clock.now();
    const rmKey = key(repository, digest);
    const eventId = newId();
    const nameRef = this.appNameRef?.(appOfRepository(repository));
    await this.metadata.transact(async (tx) => {
      // Every record this body reads, in one read (one round trip on PostgreSQL, whose
      // transaction then answers the gets below from it: engine/storage/metadata.ts `prefetch`).
      await prefetch(tx, [
        ...linkedBlobRefs(repository, parsed.blobs), [repositories, repository], [repositoryManifests, rmKey], [manifests, digest],
        ...(tag === undefined ? [] : [tagRef(repository, tag)]), ...(nameRef ? [nameRef] : []),
      ]);
      // Ordered against an app rename (rename.ts): the app must still hold the name.
      if (nameRef) await requireNameHeld(tx, nameRef, repository, appId);
      // Re-check inside the transaction: a blob deleted (or unlinked by GC) since the check
      // must not be referenced. GC deletes record and links in one serializable transaction,
      // so a manifest either commits first (refs > 0: GC keeps the blob) or fails here (gc.ts).
      const gone = await this.#firstUnlinked(tx, repository, parsed.blobs);
      if (gone) throw deletedWhileChecked(gone);
      if ((await tx.get(repositories, repository)) === undefined) {
        tx.put(repositories, repository, { name: repository, appId, createdAt: now });
      }
      const isNewInRepository = (await tx.get(repositoryManifests, rmKey)) === undefined;
      const stored = await tx.get(manifests, digest);
      const record: ManifestRecord = stored ? { ...stored } : {
        mediaType: MANIFEST_V2S2,
        text: parsed.text,
        configDigest: parsed.config.digest,
        layers: parsed.layers,
        blobs: parsed.blobs,
        links: 0,
        createdAt: now,
        image,
      };
      if (isNewInRepository) {
        record.links += 1;
        tx.put(repositoryManifests, rmKey, now);
        tx.put(images, key(parsed.config.digest, repository, digest), now);
        await addBlobRefsInTransaction(tx, parsed.blobs, +1);
      }
      // Re-tagging a manifest the repository already holds changes nothing in its record.
      if (isNewInRepository || !stored) tx.put(manifests, digest, record);
      if (!stored) manifestStoredInTransaction(tx, record);
      if (tag) await putTagInTransaction(tx, repository, tag, digest, now);
      await this.#record(tx, { action: 'push', kind: 'manifest', repository, digest, mediaType: record.mediaType, size: bytes.length, ...(tag ? { tag } : {}) }, origin);
      recordImageEvent(tx, eventId, 'create', appId, repository, { digest, tag: tag ?? null, configDigest: parsed.config.digest, mediaType: record.mediaType }, account || null, now);
    });
    return digest;
  }

  /** The first of `digests` that `repository` may not serve (not linked, gone or quarantined). */
  async #firstUnlinked(reader: MetadataReader, repository: string, digests: readonly Digest[]): Promise<Digest | undefined> {
    const found = await linkedBlobs(reader, repository, digests);
    const i = found.findIndex((rec) => !rec);
    return i < 0 ? undefined : digests[i];
  }

  /**
   * The digest a tag or digest reference names in a repository (tag record, or the
   * repository's manifest link): one read outside a transaction, synchronous when the store reads
   * synchronously.
   * @throws MANIFEST_INVALID for a reference that is neither (at once); MANIFEST_UNKNOWN
   */
  resolveManifest(repository: string, reference: string): MaybePromise<Digest> {
    return andThen(this.#resolve(repository, reference, false), (found) => found.digest);
  }

  /**
   * `resolveManifest`, and with `withManifest` for a tag, the manifest record too where the store
   * reads it in the same round trip (tags.ts `taggedManifest`; `manifest` left out otherwise).
   * @throws as `resolveManifest`
   */
  #resolve(repository: string, reference: string, withManifest: boolean): MaybePromise<TaggedManifest & { digest: Digest }> {
    const ref = parseReference(reference);
    const found: MaybePromise<TaggedManifest> = 'digest' in ref
      ? andThen(holdsManifest(this.metadata, repository, ref.digest), (held) => ({ digest: held ? ref.digest : undefined }))
      : withManifest
        ? taggedManifest(this.metadata, repository, ref.tag)
        : andThen(taggedDigest(this.metadata, repository, ref.tag), (digest) => ({ digest }));
    return andThen(found, (f) => {
      if (!f.digest) throw fail('MANIFEST_UNKNOWN', `manifest unknown: ${repository}:${reference}`, { name: repository, reference });
      return f as TaggedManifest & { digest: Digest };
    });
  }

  /**
   * What a manifest GET/HEAD serves: digest, media type and the exact bytes pushed. The content
   * comes from a digest-keyed cache (content-cache.ts) once the repository is known to hold it,
   * else from the manifest record: read with the tag in one round trip where the store can
   * (PostgreSQL, the tag not in its read cache: `#resolve`), else on its own.
   * Synchronous when the store reads synchronously (the pull hot path, engine/maybe-sync.ts).
   * @throws MANIFEST_INVALID for a reference that is neither tag nor digest (at once); MANIFEST_UNKNOWN
   */
  manifestContent(repository: string, reference: string): MaybePromise<ManifestContent & { digest: Digest }> {
    return andThen(this.#resolve(repository, reference, true), ({ digest, manifest }) => {
      const cached = this.#contents.get(digest);
      if (cached) return { digest, ...cached };
      return andThen(manifest ? manifest.value : readMaybe(this.metadata, manifests, digest), (record) => {
        if (!record) throw fail('MANIFEST_UNKNOWN', `manifest unknown: ${repository}:${reference}`, { name: repository, reference });
        const content = { mediaType: record.mediaType, bytes: manifestBytes(record) };
        this.#contents.set(digest, content);
        return { digest, ...content };
      });
    });
  }

  /**
   * Deletes a tag (reference is a tag: only the tag goes, OCI distribution 1.1) or a manifest
   * with every tag pointing at it (reference is a digest), and records a `registry:image` destroy event by `account`.
   * @param origin who deletes (the `delete` notification's request and actor: distribution's
   *        target is the repository with the tag, or with the digest)
   * @throws MANIFEST_UNKNOWN
   */
  async deleteManifest(repository: string, reference: string, account: string | null = null, origin = NO_ORIGIN): Promise<void> {
    const digest = await this.resolveManifest(repository, reference);
    const eventId = newId();
    const now = this.clock.now();
    await this.metadata.transact(async (tx) => {
      const byTag = !isDigest(reference);
      if (byTag) await removeTagInTransaction(tx, repository, reference);
      else await removeManifestInTransaction(tx, repository, digest);
      const repo = await tx.get(repositories, repository);
      const stored = await tx.get(manifests, digest);
      if (repo) recordImageEvent(tx, eventId, 'destroy', repo.appId, repository, { digest, tag: isDigest(reference) ? null : reference, configDigest: stored?.configDigest ?? null, mediaType: stored?.mediaType ?? null }, account, now);
      await this.#record(tx, byTag ? { action: 'delete', repository, tag: reference } : { action: 'delete', repository, digest }, origin);
    });
  }

  /** Records the notification of a change inside its transaction, when an endpoint wants it. */
  async #record(tx: MetadataTransaction, subject: EventSubject, origin: EventOrigin): Promise<void> {
    if (this.notifications?.wants(subject.action)) await this.notifications.recordInTransaction(tx, [subject], origin);
  }

  /** Deletes every manifest, tag and blob link of each repository of an app (app deletion). */
  async deleteRepositoriesOf(appName: string): Promise<void> {
    const range = appRepositoryRange(appName);
    await this.metadata.transact(async (tx) => {
      for (const { key: repository } of await tx.range(repositories, range)) {
        for (const { key: k } of await tx.range(repositoryManifests, { prefix: repository })) {
          await removeManifestInTransaction(tx, repository, k.slice(repository.length + 1) as Digest);
        }
        await removeTagsOfRepositoryInTransaction(tx, repository);
        tx.remove(repositories, repository);
      }
      // Links of every repository of the app, also those with blobs but no manifest yet.
      await unlinkRangeInTransaction(tx, range);
    });
  }

  /** Tags of a repository in lexical order, `n` at a time after `last`. */
  async listTags(repository: string, n: number, last: string | undefined): Promise<Page> {
    const after = last !== undefined ? checkIdentifier('tag', last, 'PAGINATION_INVALID') : undefined;
    return page(await tagPage(this.metadata, repository, after, n + 1), n);
  }

  /** True when the repository has at least one manifest. */
  async hasRepository(repository: string): Promise<boolean> {
    return (await this.metadata.get(repositories, repository)) !== undefined;
  }

  /**
   * Repository names in lexical order whose record `canRead` accepts, `n` at a time after
   * `last`. `canRead` may answer later (a promise); it is asked about the repositories in order,
   * one at a time, and only until the page is full.
   * @throws PAGINATION_INVALID for a malformed `last`.
   */
  async catalog(canRead: (repository: RepositoryRecord) => boolean | Promise<boolean>, n: number, last: string | undefined): Promise<Page> {
    const items: string[] = [];
    let after = last !== undefined ? checkIdentifier('repository', last, 'PAGINATION_INVALID') : undefined;
    const batch = Math.min(Math.max(n + 2, 16), 1024);
    for (;;) {
      const entries = await this.metadata.range(repositories, { ...(after === undefined ? {} : { start: after }), limit: batch });
      for (const { key: name, value } of entries) {
        if (name === after || !(await canRead(value))) continue;
        items.push(name);
        if (items.length > n) return page(items, n);
      }
      if (entries.length < batch) return page(items, n);
      after = entries[entries.length - 1]!.key;
    }
  }

  #tagOrDigest(reference: string, digest: Digest): string | undefined {
    const ref = parseReference(reference);
    if ('tag' in ref) return ref.tag;
    const given = ref.digest;
    if (given !== digest) throw fail('DIGEST_INVALID', `manifest digest ${digest} does not match the reference ${given}`, { expected: given, actual: digest });
    return undefined;
  }

  /**
   * Inspects the image of a manifest PUT whose blobs were just found linked, telling a blob that
   * GC took meanwhile from a real failure. GC may collect an unreferenced blob while the worker
   * reads it: when the blob is no longer linked, MANIFEST_BLOB_UNKNOWN names it (the client pushes
   * it again). When every blob is still linked but the worker found one missing (BLOB_UNKNOWN),
   * the blob was collected and pushed again between the worker's read and the check (a deleted
   * image's layer uploaded by another push): the inspection runs once more over the new bytes;
   * if it still finds a blob missing, MANIFEST_BLOB_UNKNOWN, never an internal error.
   * The worker reports a missing blob as BLOB_UNKNOWN with `{ digest }` (workers/inspect-image.ts).
   * @throws MANIFEST_BLOB_UNKNOWN as above; whatever the inspection throws otherwise.
   */
  async #inspectPushed(repository: string, configDigest: Digest, layers: Digest[], blobs: Digest[], account: string): Promise<ImageInfo> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await inspectImage(this.metadata, this.inspect, configDigest, layers, account);
      } catch (e) {
        const gone = await this.#firstUnlinked(this.metadata, repository, blobs);
        if (gone) throw deletedWhileChecked(gone);
        if (!isSlipwayError(e) || e.code !== 'BLOB_UNKNOWN') throw e;
        if (attempt === 1) continue;
        const named = (e.detail as { digest?: Digest } | undefined)?.digest;
        throw fail('MANIFEST_BLOB_UNKNOWN', `blob unknown to registry: ${named ?? 'a blob of the manifest'} changed while the manifest was checked; push it again`, named ? { digest: named } : undefined);
      }
    }
  }

}

function deletedWhileChecked(digest: Digest): Error {
  return fail('MANIFEST_BLOB_UNKNOWN', `blob unknown to registry: ${digest} (deleted while the manifest was checked; push it again)`, { digest });
}

function page(items: string[], n: number): Page {
  if (items.length > n) {
    const kept = items.slice(0, n);
    return { items: kept, next: kept[kept.length - 1] };
  }
  return { items };
}
