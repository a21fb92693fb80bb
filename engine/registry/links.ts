/**
 * Repository → blob links: a repository serves only blobs uploaded or mounted into it
 * (distribution's linked blob store), which is what makes cross-repository access control and
 * mounting work over one content-addressed store.
 *
 * A link is two keys written and removed together, only by the functions below and only inside
 * one write transaction, so neither can exist without the other (a crash commits both or
 * neither): `repositoryBlobs` `repository␟digest` (may this repository serve the blob?) and its
 * inverse `blobRepositories` `digest␟repository` (which repositories link the blob? GC), both
 * with the time linked (ms) as value. `␟` is KEY_SEPARATOR (U+001F).
 */
import { key, prefixRange, KEY_SEPARATOR, type Store } from '../store.js';
import type { Digest } from '../digest.js';
import type { BlobRecord } from '../blobs/records.js';

/** Links `digest` into `repository` (no-op when linked); call inside a write transaction. */
export function linkBlobInTransaction(store: Store, repository: string, digest: Digest, now: number): void {
  const k = key(repository, digest);
  if (store.repositoryBlobs.get(k) !== undefined) return;
  store.repositoryBlobs.put(k, now);
  store.blobRepositories.put(key(digest, repository), now);
}

/**
 * Removes the link of `digest` from `repository`; call inside a write transaction.
 * @returns false when there was no link (nothing changed).
 */
export function unlinkBlobInTransaction(store: Store, repository: string, digest: Digest): boolean {
  const k = key(repository, digest);
  if (store.repositoryBlobs.get(k) === undefined) return false;
  store.repositoryBlobs.remove(k);
  store.blobRepositories.remove(key(digest, repository));
  return true;
}

/**
 * Removes every link of the repositories whose `repository␟digest` keys fall in `range` (e.g.
 * `prefixRange(repository)`, or all repositories of an app); call inside a write transaction.
 * @returns the number of links removed.
 */
export function unlinkRangeInTransaction(store: Store, range: { start: string; end: string }): number {
  const keys = [...store.repositoryBlobs.getKeys(range)];
  for (const k of keys) {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    unlinkBlobInTransaction(store, k.slice(0, cut), k.slice(cut + 1) as Digest);
  }
  return keys.length;
}

/**
 * Removes `digest` from every repository that links it (GC deleting the blob's record); call
 * inside a write transaction. Reads only this digest's index entries, not every link.
 * @returns the repositories it was unlinked from.
 */
export function unlinkEverywhereInTransaction(store: Store, digest: Digest): string[] {
  const repositories = repositoriesLinking(store, digest);
  for (const repository of repositories) unlinkBlobInTransaction(store, repository, digest);
  return repositories;
}

/** The repositories that link `digest`, in name order (one index range read). */
export function repositoriesLinking(store: Store, digest: Digest): string[] {
  return [...store.blobRepositories.getKeys(prefixRange(digest))].map((k) => k.slice(digest.length + 1));
}

/** The blob's record when `repository` may serve `digest` (linked and stored), else undefined. */
export function linkedBlob(store: Store, repository: string, digest: Digest): BlobRecord | undefined {
  const rec = store.repositoryBlobs.get(key(repository, digest)) !== undefined ? store.blobs.get(digest) : undefined;
  // A quarantined blob (bytes failed verification, blobs/quarantine.ts) is unknown to every
  // reader until a verified upload heals it.
  return rec?.quarantined ? undefined : rec;
}

/**
 * Builds the `blobRepositories` index from every `repositoryBlobs` entry (store migration 2 → 3;
 * idempotent); call inside a write transaction.
 * @returns the number of links indexed.
 */
export function indexBlobLinksInTransaction(store: Store): number {
  let n = 0;
  for (const { key: k, value: linkedAt } of store.repositoryBlobs.getRange()) {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    store.blobRepositories.put(key(k.slice(cut + 1), k.slice(0, cut)), linkedAt);
    n++;
  }
  return n;
}
