/**
 * Repository → blob links: a repository serves only blobs uploaded or mounted into it
 * (distribution's linked blob store), which is what makes cross-repository access control and
 * mounting work over one content-addressed store.
 */
import { key, type Store } from '../store.js';
import type { Digest } from '../digest.js';
import type { BlobRecord } from '../blobs/records.js';

/** Links `digest` into `repository`; call inside a write transaction. */
export function linkBlobInTransaction(store: Store, repository: string, digest: Digest, now: number): void {
  const k = key(repository, digest);
  if (store.repositoryBlobs.get(k) === undefined) store.repositoryBlobs.put(k, now);
}

/** The blob's record when `repository` may serve `digest` (linked and stored), else undefined. */
export function linkedBlob(store: Store, repository: string, digest: Digest): BlobRecord | undefined {
  return store.repositoryBlobs.get(key(repository, digest)) !== undefined ? store.blobs.get(digest) : undefined;
}
