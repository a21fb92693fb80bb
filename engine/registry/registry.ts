/**
 * Manifests, tags, repositories and the image-id index (distribution spec "Pulling manifests",
 * "Pushing manifests", "Content discovery", "Deleting"). Blob bytes are the BlobStore's; this
 * service keeps the records, each change in one LMDB transaction.
 *
 * Reference counting: a blob's `refs` is the number of (repository, manifest) pairs naming it;
 * it changes in the same transaction that adds or removes the pair, and GC deletes only blobs
 * at zero refs (after a grace period, see issue 4's GC).
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
import { isBlobLinked, linkBlobInTransaction } from './links.js';
import type { ManifestRecord } from './records.js';

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
    const rec = this.store.blobs.get(digest);
    if (!rec || this.store.repositoryBlobs.get(key(repository, digest)) === undefined) {
      throw fail('BLOB_UNKNOWN', 'blob unknown to registry', { digest });
    }
    return rec;
  }

  /** Links a blob of `from` into `to` (cross-repository mount). Returns false when `from` lacks it. */
  async mount(from: string, to: string, digest: Digest): Promise<BlobRecord | undefined> {
    if (!isBlobLinked(this.store, from, digest)) return undefined;
    let rec: BlobRecord | undefined;
    await this.store.env.transaction(() => {
      rec = this.store.blobs.get(digest);
      if (rec) linkBlobInTransaction(this.store, to, digest, this.clock.now());
    });
    return rec;
  }

  /** Removes a blob from a repository (the bytes stay until GC finds them unreferenced). */
  async unlinkBlob(repository: string, digest: Digest): Promise<void> {
    this.statBlob(repository, digest);
    await this.store.repositoryBlobs.remove(key(repository, digest));
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
    const sizes = new Map<string, number>();
    for (const d of [parsed.config, ...parsed.layers]) {
      const blob = isBlobLinked(this.store, repository, d.digest) ? this.store.blobs.get(d.digest) : undefined;
      if (!blob) throw fail('MANIFEST_BLOB_UNKNOWN', `blob unknown to registry: ${d.digest} is referenced by the manifest but was not pushed to ${repository}`, { digest: d.digest });
      if (blob.size !== d.size) throw fail('MANIFEST_INVALID', `descriptor size ${d.size} of ${d.digest} does not match the blob's ${blob.size} bytes`, { digest: d.digest });
      sizes.set(d.digest, blob.size);
    }
    const existing = this.store.manifests.get(digest);
    const image = existing?.image ?? (await this.#inspect(parsed.config.digest, parsed.layers.map((l) => l.digest)));
    const now = this.clock.now();
    await this.store.env.transaction(() => {
      // Re-check inside the transaction: a blob deleted since the check must not be referenced.
      for (const b of parsed.blobs) {
        if (!this.store.blobs.get(b)) throw fail('MANIFEST_BLOB_UNKNOWN', `blob unknown to registry: ${b}`, { digest: b });
      }
      if (!this.store.repositories.get(repository)) {
        this.store.repositories.put(repository, { name: repository, appId, createdAt: now });
      }
      const rmKey = key(repository, digest);
      const isNewInRepository = this.store.repositoryManifests.get(rmKey) === undefined;
      const record: ManifestRecord = this.store.manifests.get(digest) ?? {
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
      this.store.manifests.put(digest, record);
      if (tag) this.store.tags.put(key(repository, tag), { digest, updatedAt: now });
    });
    return digest;
  }

  /**
   * Resolves a tag or digest in a repository.
   * @throws MANIFEST_UNKNOWN
   */
  getManifest(repository: string, reference: string): { digest: Digest; record: ManifestRecord } {
    const ref = parseReference(reference);
    let digest: Digest | undefined;
    if ('digest' in ref) {
      if (this.store.repositoryManifests.get(key(repository, ref.digest)) !== undefined) digest = ref.digest;
    } else {
      digest = this.store.tags.get(key(repository, ref.tag))?.digest;
    }
    const record = digest && this.store.manifests.get(digest);
    if (!digest || !record) throw fail('MANIFEST_UNKNOWN', `manifest unknown: ${repository}:${reference}`, { name: repository, reference });
    return { digest, record };
  }

  /**
   * Deletes a tag (reference is a tag: only the tag goes, OCI distribution 1.1) or a manifest
   * with every tag pointing at it (reference is a digest).
   * @throws MANIFEST_UNKNOWN
   */
  async deleteManifest(repository: string, reference: string): Promise<void> {
    const { digest } = this.getManifest(repository, reference);
    await this.store.env.transaction(() => {
      if (!isDigest(reference)) {
        this.store.tags.remove(key(repository, reference));
        return;
      }
      this.#removeManifestInTransaction(repository, digest);
    });
  }

  /** Removes a (repository, manifest) pair, its tags, its image-id entry and its blob refs. */
  #removeManifestInTransaction(repository: string, digest: Digest): void {
    const rmKey = key(repository, digest);
    if (this.store.repositoryManifests.get(rmKey) === undefined) return;
    const record = this.store.manifests.get(digest);
    this.store.repositoryManifests.remove(rmKey);
    for (const { key: k, value } of this.store.tags.getRange(prefixRange(repository))) {
      if (value.digest === digest) this.store.tags.remove(k);
    }
    if (!record) return;
    this.store.images.remove(key(record.configDigest, repository, digest));
    for (const b of record.blobs) {
      const blob = this.store.blobs.get(b);
      if (blob) this.store.blobs.put(b, { ...blob, refs: Math.max(0, blob.refs - 1) });
    }
    if (record.links <= 1) this.store.manifests.remove(digest);
    else this.store.manifests.put(digest, { ...record, links: record.links - 1 });
  }

  /** Deletes every manifest, tag and blob link of each repository of an app (app deletion). */
  async deleteRepositoriesOf(appName: string): Promise<void> {
    const range = { start: appName + '/', end: appName + '0' };
    await this.store.env.transaction(() => {
      for (const { key: repository } of this.store.repositories.getRange(range)) {
        for (const { key: k } of this.store.repositoryManifests.getRange(prefixRange(repository))) {
          this.#removeManifestInTransaction(repository, k.slice(repository.length + 1) as Digest);
        }
        for (const { key: k } of this.store.repositoryBlobs.getRange(prefixRange(repository))) this.store.repositoryBlobs.remove(k);
        for (const { key: k } of this.store.tags.getRange(prefixRange(repository))) this.store.tags.remove(k);
        this.store.repositories.remove(repository);
      }
      for (const { key: k } of this.store.repositoryBlobs.getRange(range)) this.store.repositoryBlobs.remove(k);
    });
  }

  /** Tags of a repository in lexical order, `n` at a time after `last`. */
  listTags(repository: string, n: number, last: string | undefined): Page {
    const range = prefixRange(repository);
    const start = last !== undefined ? key(repository, last) : range.start;
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
    for (const name of this.store.repositories.getKeys(last !== undefined ? { start: last } : {})) {
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

function page(items: string[], n: number): Page {
  if (items.length > n) {
    const kept = items.slice(0, n);
    return { items: kept, next: kept[kept.length - 1] };
  }
  return { items };
}
