/**
 * Repository → blob links: a repository serves only blobs uploaded or mounted into it
 * (distribution's linked blob store), which is what makes cross-repository access control and
 * mounting work over one content-addressed store.
 *
 * A link is two keys written and removed together, only by the functions below and only inside
 * one transaction, so neither can exist without the other (a crash commits both or neither):
 * `repositoryBlobs` `repository␟digest` (may this repository serve the blob?) and its inverse
 * `blobRepositories` `digest␟repository` (which repositories link the blob? GC), both with the
 * time linked (ms) as value. `␟` is KEY_SEPARATOR (U+001F).
 */
import { key, KEY_SEPARATOR, readMaybe, type MetadataReader, type MetadataTransaction, type RecordRef } from '../storage/metadata.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';
import type { Digest } from '../digest.js';
import type { BlobRecord } from '../blobs/records.js';
import { blobRecord, blobRecordRefs } from '../blobs/refs.js';
import { blobRepositories, repositoryBlobs } from './keyspaces.js';

/** Links `digest` into `repository` (no-op when linked); call inside the caller's transaction (an upload's commit, a mount). */
export async function linkBlobInTransaction(tx: MetadataTransaction, repository: string, digest: Digest, now: number): Promise<void> {
  const k = key(repository, digest);
  if ((await tx.get(repositoryBlobs, k)) !== undefined) return;
  tx.put(repositoryBlobs, k, now);
  tx.put(blobRepositories, key(digest, repository), now);
}

/**
 * Removes the link of `digest` from `repository`; call inside a transaction.
 * @returns false when there was no link (nothing changed).
 */
export async function unlinkBlobInTransaction(tx: MetadataTransaction, repository: string, digest: Digest): Promise<boolean> {
  const k = key(repository, digest);
  if ((await tx.get(repositoryBlobs, k)) === undefined) return false;
  tx.remove(repositoryBlobs, k);
  tx.remove(blobRepositories, key(digest, repository));
  return true;
}

/**
 * Removes every link of the repositories whose `repository␟digest` keys fall in `[start, end)`
 * (all repositories of an app); call inside a transaction.
 * @returns the number of links removed.
 */
export async function unlinkRangeInTransaction(tx: MetadataTransaction, range: { start: string; end: string }): Promise<number> {
  const links = await tx.range(repositoryBlobs, range);
  for (const { key: k } of links) {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    tx.remove(repositoryBlobs, k);
    tx.remove(blobRepositories, key(k.slice(cut + 1), k.slice(0, cut)));
  }
  return links.length;
}

/**
 * Moves every link of the repositories whose `repository␟digest` keys fall in `range` (an app's
 * repositories, rename.ts) to the repository `rename` names, keeping the time linked; call inside a transaction.
 * @returns the number of links moved.
 */
export async function moveLinksInTransaction(tx: MetadataTransaction, range: { start: string; end: string }, rename: (repository: string) => string): Promise<number> {
  const links = await tx.range(repositoryBlobs, range);
  for (const { key: k, value: at } of links) {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    const repository = k.slice(0, cut), digest = k.slice(cut + 1);
    tx.remove(repositoryBlobs, k);
    tx.remove(blobRepositories, key(digest, repository));
    tx.put(repositoryBlobs, key(rename(repository), digest), at);
    tx.put(blobRepositories, key(digest, rename(repository)), at);
  }
  return links.length;
}

/**
 * Removes `digest` from every repository that links it (GC deleting the blob's record); call
 * inside a transaction. Reads only this digest's index entries, not every link.
 * @returns the repositories it was unlinked from.
 */
export async function unlinkEverywhereInTransaction(tx: MetadataTransaction, digest: Digest): Promise<string[]> {
  const repositories = await repositoriesLinking(tx, digest);
  for (const repository of repositories) {
    tx.remove(repositoryBlobs, key(repository, digest));
    tx.remove(blobRepositories, key(digest, repository));
  }
  return repositories;
}

/** The repositories that link `digest`, in name order (one index range read). */
export async function repositoriesLinking(reader: MetadataReader, digest: Digest): Promise<string[]> {
  return (await reader.range(blobRepositories, { prefix: digest })).map((e) => e.key.slice(digest.length + 1));
}

/** True when `repository` links `digest` (whatever the blob's record says); at once when `reader` reads synchronously. */
export function isLinked(reader: MetadataReader, repository: string, digest: Digest): MaybePromise<boolean> {
  return andThen(readMaybe(reader, repositoryBlobs, key(repository, digest)), (v) => v !== undefined);
}

/**
 * The blob's record when `repository` may serve `digest` (linked, stored and not quarantined),
 * else undefined. Two reads (link, record); in or outside a transaction; synchronous when
 * `reader` reads synchronously (a blob HEAD, engine/maybe-sync.ts).
 */
export function linkedBlob(reader: MetadataReader, repository: string, digest: Digest): MaybePromise<BlobRecord | undefined> {
  return andThen(isLinked(reader, repository, digest), (linked) => linked
    // A quarantined blob (bytes failed verification, blobs/quarantine.ts) is unknown to every
    // reader until a verified upload heals it.
    ? andThen(blobRecord(reader, digest), (rec) => rec?.quarantined ? undefined : rec)
    : undefined);
}

/**
 * What `linkedBlobs` reads for `digests`, for a `getMany` that reads other records with them:
 * each digest's link in `repository`, then each digest's record. `linkedFrom` reads the answers.
 */
export function linkedBlobRefs(repository: string, digests: readonly Digest[]): Array<RecordRef<unknown>> {
  return [...digests.map((d) => [repositoryBlobs, key(repository, d)] as const), ...blobRecordRefs(digests)];
}

/**
 * For each digest, what `linkedBlob` returns, from the first `2 × count` answers of a `getMany`
 * of `linkedBlobRefs` (links, then records).
 */
export function linkedFrom(values: readonly unknown[], count: number): Array<BlobRecord | undefined> {
  const out: Array<BlobRecord | undefined> = [];
  for (let i = 0; i < count; i++) {
    const rec = values[count + i] as BlobRecord | undefined;
    out.push(values[i] !== undefined && rec && !rec.quarantined ? rec : undefined);
  }
  return out;
}

/**
 * For each of `digests`, what `linkedBlob` returns (the record when `repository` may serve it),
 * read with one `getMany` (links and records together: one round trip on a networked store).
 */
export async function linkedBlobs(reader: MetadataReader, repository: string, digests: readonly Digest[]): Promise<Array<BlobRecord | undefined>> {
  return linkedFrom(await reader.getMany(linkedBlobRefs(repository, digests)), digests.length);
}
