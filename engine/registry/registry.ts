/**
 * Manifests, tags, repositories and the image-id index (distribution spec "Pulling manifests",
 * "Pushing manifests", "Content discovery", "Deleting"). Blob bytes are the BlobStore's; this
 * service keeps the records, each change in one LMDB transaction. Tags are written only through
 * tags.ts, which keeps the manifest → tags index in the same transaction.
 *
 * Reference counting: a blob's `refs` is the number of (repository, manifest) pairs naming it;
 * it changes in the same transaction that adds or removes the pair, and GC deletes only blobs
 * at zero refs (after a grace period: engine/registry/gc.ts, whose header explains why a push
 * racing GC can fail with MANIFEST_BLOB_UNKNOWN but never store a manifest without its blobs).
 */
import { digestOf, isDigest, type Digest } from '../digest.js';
import { fail } from '../errors.js';
import { key, prefixRange, type Store } from '../store.js';
import type { Clock } from '../clock.js';
import type { BlobStore } from '../blobs/cas.js';
import type { BlobRecord, LayerScan } from '../blobs/records.js';
import { parseManifest } from './manifest-parse.js';
import { checkPlatform, imageInfo, type ConfigSummary } from './image-info.js';
import { parseReference } from './names.js';
import { linkedBlob, linkBlobInTransaction, unlinkBlobInTransaction, unlinkRangeInTransaction } from './links.js';
import { putTagInTransaction, removeTagInTransaction, removeTagsOfManifestInTransaction, removeTagsOfRepositoryInTransaction } from './tags.js';
import type { ManifestRecord } from './records.js';
import { ManifestContentCache, type ManifestContent } from './content-cache.js';
import { checkIdentifier } from '../identifiers.js';

/** Largest manifest accepted (bytes); the OCI spec asks registries to take at least 4 MiB. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

/** Work sent to the worker pool at manifest PUT. Paths, not bytes, cross the thread boundary. */
export interface InspectRequest {
  configPath: string;
  /** Layers not inspected before (their scan is cached on the blob record afterwards). */
  layers: Array<{ digest: string; path: string }>;
}
export interface InspectResult {
  config: ConfigSummary;
  /** digest → scan, for each requested layer. */
  scans: Record<string, LayerScan>;
}
/** Runs an InspectRequest off the event loop (workers/pool.ts). */
export type ImageInspector = (req: InspectRequest) => Promise<InspectResult>;

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

  constructor(
    readonly store: Store,
    readonly blobs: BlobStore,
    readonly clock: Clock,
    readonly inspect: ImageInspector,
  ) {}

  /**
   * A blob `repository` may serve.
   * @throws BLOB_UNKNOWN when absent or not linked to the repository.
   */
  statBlob(repository: string, digest: Digest): BlobRecord {
    const rec = linkedBlob(this.store, repository, digest);
    if (!rec) throw fail('BLOB_UNKNOWN', 'blob unknown to registry', { digest });
    if (rec.refs === 0) this.#touch(digest, rec);
    return rec;
  }

  /**
   * Records that a client showed interest in an unreferenced blob (GC grace), without blocking:
   * one transaction that re-reads the record (never overwrites a concurrent refs change).
   */
  #touch(digest: Digest, rec: BlobRecord): void {
    const now = this.clock.now();
    if (now - Math.max(rec.createdAt, rec.touchedAt ?? 0) < this.touchEveryMs || this.#touching.has(digest)) return;
    this.#touching.add(digest);
    this.store.env.transaction(() => {
      const cur = this.store.blobs.get(digest);
      if (cur && cur.refs === 0) this.store.blobs.put(digest, { ...cur, touchedAt: now });
    }).catch(() => undefined).finally(() => this.#touching.delete(digest));
  }

  /** Links a blob of `from` into `to` (cross-repository mount). Returns false when `from` lacks it. */
  async mount(from: string, to: string, digest: Digest): Promise<BlobRecord | undefined> {
    if (!linkedBlob(this.store, from, digest)) return undefined;
    let rec: BlobRecord | undefined;
    const now = this.clock.now();
    await this.store.env.transaction(() => {
      rec = this.store.blobs.get(digest);
      if (!rec || rec.quarantined) return void (rec = undefined);
      linkBlobInTransaction(this.store, to, digest, now);
      // A mount is followed by a manifest PUT: keep the blob from GC for its grace period.
      if (now - Math.max(rec.createdAt, rec.touchedAt ?? 0) >= this.touchEveryMs) this.store.blobs.put(digest, { ...rec, touchedAt: now });
    });
    return rec;
  }

  /**
   * Removes a blob from a repository (the bytes stay until GC finds them unreferenced).
   * @throws BLOB_UNKNOWN when the repository does not link it.
   */
  async unlinkBlob(repository: string, digest: Digest): Promise<void> {
    this.statBlob(repository, digest);
    await this.store.env.transaction(() => unlinkBlobInTransaction(this.store, repository, digest));
  }

  /**
   * Stores a manifest under a tag or its digest.
   * @param appId the app that owns `repository` (already authorised by the caller)
   * @throws MANIFEST_INVALID, MANIFEST_BLOB_UNKNOWN, DIGEST_INVALID, UNSUPPORTED_ARCHITECTURE
   */
  async putManifest(repository: string, appId: string, reference: string, bytes: Uint8Array, contentType: string | undefined): Promise<Digest> {
    const digest = digestOf(bytes);
    const tag = this.#tagOrDigest(reference, digest);
    const parsed = parseManifest(bytes, contentType);
    for (const d of [parsed.config, ...parsed.layers]) {
      const blob = linkedBlob(this.store, repository, d.digest);
      if (!blob) throw fail('MANIFEST_BLOB_UNKNOWN', `blob unknown to registry: ${d.digest} is referenced by the manifest but was not pushed to ${repository}`, { digest: d.digest });
      if (blob.size !== d.size) throw fail('MANIFEST_INVALID', `descriptor size ${d.size} of ${d.digest} does not match the blob's ${blob.size} bytes`, { digest: d.digest });
    }
    const existing = this.store.manifests.get(digest);
    const image = existing?.image ?? (await this.#inspect(parsed.config.digest, parsed.layers.map((l) => l.digest)).catch((e: unknown) => {
      // GC may have collected an unreferenced blob while the worker read it: say which one.
      const gone = parsed.blobs.find((b) => !linkedBlob(this.store, repository, b));
      throw gone ? fail('MANIFEST_BLOB_UNKNOWN', `blob unknown to registry: ${gone} (deleted while the manifest was checked; push it again)`, { digest: gone }) : e;
    }));
    const now = this.clock.now();
    await this.store.env.transaction(() => {
      // Re-check inside the transaction: a blob deleted (or unlinked by GC) since the check
      // must not be referenced. GC deletes record and links in one transaction, so a manifest
      // either commits first (refs > 0: GC keeps the blob) or fails here (see gc.ts).
      for (const b of parsed.blobs) {
        if (!linkedBlob(this.store, repository, b)) throw fail('MANIFEST_BLOB_UNKNOWN', `blob unknown to registry: ${b} (deleted while the manifest was checked; push it again)`, { digest: b });
      }
      if (!this.store.repositories.get(repository)) {
        this.store.repositories.put(repository, { name: repository, appId, createdAt: now });
      }
      const rmKey = key(repository, digest);
      const isNewInRepository = this.store.repositoryManifests.get(rmKey) === undefined;
      const stored = this.store.manifests.get(digest);
      const record: ManifestRecord = stored ?? {
        mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
        bytes,
        configDigest: parsed.config.digest,
        layers: parsed.layers,
        blobs: parsed.blobs,
        links: 0,
        createdAt: now,
        image,
      };
      if (isNewInRepository) {
        record.links += 1;
        this.store.repositoryManifests.put(rmKey, now);
        this.store.images.put(key(parsed.config.digest, repository, digest), now);
        for (const b of parsed.blobs) {
          const blob = this.store.blobs.get(b)!;
          this.store.blobs.put(b, { ...blob, refs: blob.refs + 1 });
        }
      }
      // Re-tagging a manifest the repository already holds changes nothing in its record.
      if (isNewInRepository || !stored) this.store.manifests.put(digest, record);
      if (tag) putTagInTransaction(this.store, repository, tag, digest, now);
    });
    return digest;
  }

  /**
   * The digest a tag or digest reference names in a repository (tag record, or the
   * repository's manifest link).
   * @throws MANIFEST_UNKNOWN
   */
  resolveManifest(repository: string, reference: string): Digest {
    const ref = parseReference(reference);
    let digest: Digest | undefined;
    if ('digest' in ref) {
      if (this.store.repositoryManifests.get(key(repository, ref.digest)) !== undefined) digest = ref.digest;
    } else {
      digest = this.store.tags.get(key(repository, ref.tag))?.digest;
    }
    if (!digest) throw fail('MANIFEST_UNKNOWN', `manifest unknown: ${repository}:${reference}`, { name: repository, reference });
    return digest;
  }

  /**
   * What a manifest GET/HEAD serves: digest, media type and the exact bytes pushed. The content
   * comes from a digest-keyed cache (content-cache.ts) once the repository is known to hold it.
   * @throws MANIFEST_UNKNOWN
   */
  manifestContent(repository: string, reference: string): ManifestContent & { digest: Digest } {
    const digest = this.resolveManifest(repository, reference);
    let content = this.#contents.get(digest);
    if (!content) {
      const record = this.store.manifests.get(digest);
      if (!record) throw fail('MANIFEST_UNKNOWN', `manifest unknown: ${repository}:${reference}`, { name: repository, reference });
      content = { mediaType: record.mediaType, bytes: Buffer.from(record.bytes) };
      this.#contents.set(digest, content);
    }
    return { digest, ...content };
  }

  /**
   * Deletes a tag (reference is a tag: only the tag goes, OCI distribution 1.1) or a manifest
   * with every tag pointing at it (reference is a digest).
   * @throws MANIFEST_UNKNOWN
   */
  async deleteManifest(repository: string, reference: string): Promise<void> {
    const digest = this.resolveManifest(repository, reference);
    await this.store.env.transaction(() => {
      if (!isDigest(reference)) {
        removeTagInTransaction(this.store, repository, reference);
        return;
      }
      removeManifestInTransaction(this.store, repository, digest);
    });
  }

  /** Deletes every manifest, tag and blob link of each repository of an app (app deletion). */
  async deleteRepositoriesOf(appName: string): Promise<void> {
    const range = { start: appName + '/', end: appName + '0' };
    await this.store.env.transaction(() => {
      for (const { key: repository } of this.store.repositories.getRange(range)) {
        for (const { key: k } of this.store.repositoryManifests.getRange(prefixRange(repository))) {
          removeManifestInTransaction(this.store, repository, k.slice(repository.length + 1) as Digest);
        }
        removeTagsOfRepositoryInTransaction(this.store, repository);
        this.store.repositories.remove(repository);
      }
      // Links of every repository of the app, also those with blobs but no manifest yet.
      unlinkRangeInTransaction(this.store, range);
    });
  }

  /** Tags of a repository in lexical order, `n` at a time after `last`. */
  listTags(repository: string, n: number, last: string | undefined): Page {
    const range = prefixRange(repository);
    const start = last !== undefined ? key(repository, checkIdentifier('tag', last, 'PAGINATION_INVALID')) : range.start;
    const items: string[] = [];
    for (const k of this.store.tags.getKeys({ start, end: range.end })) {
      if (k === start) continue; // pages start strictly after `last`
      items.push(k.slice(repository.length + 1));
      if (items.length > n) break;
    }
    return page(items, n);
  }

  /** True when the repository has at least one manifest. */
  hasRepository(repository: string): boolean {
    return this.store.repositories.get(repository) !== undefined;
  }

  /** Repository names in lexical order that `canRead` accepts, `n` at a time after `last`. */
  catalog(canRead: (repository: string) => boolean, n: number, last: string | undefined): Page {
    const items: string[] = [];
    for (const name of this.store.repositories.getKeys(last !== undefined ? { start: checkIdentifier('repository', last, 'PAGINATION_INVALID') } : {})) {
      if (name === last || !canRead(name)) continue;
      items.push(name);
      if (items.length > n) break;
    }
    return page(items, n);
  }

  #tagOrDigest(reference: string, digest: Digest): string | undefined {
    const ref = parseReference(reference);
    if ('tag' in ref) return ref.tag;
    const given = ref.digest;
    if (given !== digest) throw fail('DIGEST_INVALID', `manifest digest ${digest} does not match the reference ${given}`, { expected: given, actual: digest });
    return undefined;
  }

  async #inspect(configDigest: Digest, layers: Digest[]) {
    const pending = [...new Set(layers)].filter((d) => !this.store.blobs.get(d)?.scan);
    const result = await this.inspect({
      configPath: this.blobs.pathOf(configDigest),
      layers: pending.map((d) => ({ digest: d, path: this.blobs.pathOf(d) })),
    });
    checkPlatform(result.config);
    if (pending.length > 0) {
      await this.store.env.transaction(() => {
        for (const d of pending) {
          const blob = this.store.blobs.get(d);
          const scan = result.scans[d];
          if (blob && scan) this.store.blobs.put(d, { ...blob, scan });
        }
      });
    }
    const scans = layers.map((d) => result.scans[d] ?? this.store.blobs.get(d)?.scan ?? { whiteouts: 0, examples: [], readable: false });
    return imageInfo(result.config, scans);
  }
}

/**
 * Removes a (repository, manifest) pair: the repository link, every tag of the repository that
 * points at it (read from the manifest → tags index, tags.ts: cost independent of the
 * repository's tag count), its image-id index entry and one reference of each blob it names; the
 * manifest record goes when no repository holds it any more. Call inside a write transaction.
 * Used by DELETE by digest, app deletion and image retention (gc.ts).
 * @returns false when the pair did not exist (nothing changed).
 */
export function removeManifestInTransaction(store: Store, repository: string, digest: Digest): boolean {
  const rmKey = key(repository, digest);
  if (store.repositoryManifests.get(rmKey) === undefined) return false;
  const record = store.manifests.get(digest);
  store.repositoryManifests.remove(rmKey);
  removeTagsOfManifestInTransaction(store, repository, digest);
  if (!record) return true;
  store.images.remove(key(record.configDigest, repository, digest));
  for (const b of record.blobs) {
    const blob = store.blobs.get(b);
    if (blob) store.blobs.put(b, { ...blob, refs: Math.max(0, blob.refs - 1) });
  }
  if (record.links <= 1) store.manifests.remove(digest);
  else store.manifests.put(digest, { ...record, links: record.links - 1 });
  return true;
}

function page(items: string[], n: number): Page {
  if (items.length > n) {
    const kept = items.slice(0, n);
    return { items: kept, next: kept[kept.length - 1] };
  }
  return { items };
}
