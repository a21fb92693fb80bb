/**
 * Manifest records outside the Registry service: the removal of a (repository, manifest) pair
 * inside a caller's transaction (DELETE by digest, app deletion, image retention in gc.ts), the
 * check that a repository holds a manifest, and the store's manifest totals (metrics). Keyspaces
 * and records: keyspaces.ts, records.ts.
 */
import { key, readMaybe, type MetadataReader, type MetadataStore, type MetadataTransaction } from '../storage/metadata.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';
import { RunningTotals, type Totals } from '../storage/running-totals.js';
import type { Digest } from '../digest.js';
import { addBlobRefsInTransaction } from '../blobs/refs.js';
import { removeTagsOfManifestInTransaction } from './tags.js';
import { manifestSize, type ManifestRecord } from './records.js';
import { images, manifests, manifestTotalsKeyspace, repositoryManifests } from './keyspaces.js';

/**
 * The manifest records' running totals (storage/running-totals.ts): a record created
 * (`manifestStoredInTransaction`) or removed (`removeManifestInTransaction`) adds to them.
 */
const totals = new RunningTotals(manifestTotalsKeyspace);

/** Counts `record`, just created in the caller's transaction, in the manifest totals (registry.ts, manifest PUT). */
export function manifestStoredInTransaction(tx: MetadataTransaction, record: ManifestRecord): void {
  totals.add(tx, 1, manifestSize(record));
}

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
  if (record.links <= 1) {
    tx.remove(manifests, digest);
    totals.add(tx, -1, -manifestSize(record));
  } else tx.put(manifests, digest, { ...record, links: record.links - 1 });
  return true;
}

/** True when `repository` holds the manifest `digest` (one read; in or outside a transaction; at once when `reader` reads synchronously). */
export function holdsManifest(reader: MetadataReader, repository: string, digest: Digest): MaybePromise<boolean> {
  return andThen(readMaybe(reader, repositoryManifests, key(repository, digest)), (v) => v !== undefined);
}

/**
 * How many manifest records the store holds and their bytes in total (each content-addressed
 * record once, however many repositories hold it), kept as records change (storage/running-totals.ts).
 */
export async function manifestTotals(store: MetadataStore): Promise<{ manifests: number; bytes: number }> {
  const t = await totals.readAndFold(store);
  return { manifests: t.count, bytes: t.bytes };
}

/** The manifest totals as recorded, and as counted from every record in one pass (`slipway fsck`; not one snapshot while serving). */
export function checkManifestTotals(reader: MetadataReader): Promise<{ recorded: Totals; counted: Totals }> {
  return totals.check(reader, manifests, manifestSize);
}

/** Sets the manifest totals from every manifest record, read in the caller's transaction (schema migration, `slipway fsck --repair`). */
export function resetManifestTotalsInTransaction(tx: MetadataTransaction): Promise<Totals> {
  return totals.recount(tx, manifests, manifestSize);
}
