/**
 * Manifest records outside the Registry service: the removal of a (repository, manifest) pair
 * inside a caller's transaction (DELETE by digest, app deletion, image retention in gc.ts), the
 * check that a repository holds a manifest, and the store's manifest totals (metrics). Keyspaces
 * and records: keyspaces.ts, records.ts.
 */
import { key, readMaybe, type MetadataReader, type MetadataTransaction } from '../storage/metadata.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';
import { scanKeyspace, type ScanOptions } from '../storage/scan.js';
import type { Digest } from '../digest.js';
import { addBlobRefsInTransaction } from '../blobs/refs.js';
import { removeTagsOfManifestInTransaction } from './tags.js';
import { manifestSize } from './records.js';
import { images, manifests, repositoryManifests } from './keyspaces.js';

/**
 * Removes a (repository, manifest) pair: the repository link, every tag of the repository that
 * points at it (read from the manifest → tags index, tags.ts: cost independent of the
 * repository's tag count), its image-id index entry and one reference of each blob it names; the
 * manifest record goes when no repository holds it any more. Call inside a transaction.
 * Used by DELETE by digest, app deletion and image retention (gc.ts).
 * @returns false when the pair did not exist (nothing changed).
 */
export async function removeManifestInTransaction(tx: MetadataTransaction, repository: string, digest: Digest): Promise<boolean> {
  const rmKey = key(repository, digest);
  const [held, record] = await tx.getMany([[repositoryManifests, rmKey], [manifests, digest]]);
  if (held === undefined) return false;
  tx.remove(repositoryManifests, rmKey);
  await removeTagsOfManifestInTransaction(tx, repository, digest);
  if (!record) return true;
  tx.remove(images, key(record.configDigest, repository, digest));
  await addBlobRefsInTransaction(tx, record.blobs, -1);
  if (record.links <= 1) tx.remove(manifests, digest);
  else tx.put(manifests, digest, { ...record, links: record.links - 1 });
  return true;
}

/** True when `repository` holds the manifest `digest` (one read; in or outside a transaction; at once when `reader` reads synchronously). */
export function holdsManifest(reader: MetadataReader, repository: string, digest: Digest): MaybePromise<boolean> {
  return andThen(readMaybe(reader, repositoryManifests, key(repository, digest)), (v) => v !== undefined);
}

/**
 * How many manifest records the store holds and their bytes in total (each content-addressed
 * record once, however many repositories hold it). Pages through the keyspace outside a
 * transaction (metrics), so the totals are not one snapshot while pushes commit; `scan` paces
 * the pages and lets them wait for requests (storage/scan.ts `scanKeyspace`).
 */
export async function manifestTotals(reader: MetadataReader, scan: ScanOptions = {}): Promise<{ manifests: number; bytes: number }> {
  let count = 0, bytes = 0;
  for await (const { value } of scanKeyspace(reader, manifests, undefined, scan)) { count++; bytes += manifestSize(value); }
  return { manifests: count, bytes };
}
