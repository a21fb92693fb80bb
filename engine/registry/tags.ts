/**
 * Tags and their reverse index. A tag is two keys written and removed together, only by the
 * functions below and only inside one transaction, so the index never disagrees with the tags
 * (a crash commits both or neither):
 * - `tags` `repository␟tag` → tag record (digest, updatedAt ms): what a pull by tag resolves;
 * - `manifestTags` `repository␟digest␟tag` → the tag's updatedAt (ms): the tags of one manifest
 *   in one repository, so removing a manifest (DELETE by digest, app deletion, GC) reads only
 *   its own tags instead of every tag of the repository.
 * `␟` is KEY_SEPARATOR (U+001F); no repository name, digest or tag contains it, so the tag is
 * what follows the last separator. Re-tagging (a PUT of `repository:tag` naming another digest)
 * moves the index entry from the old digest to the new one.
 */
import { key, KEY_SEPARATOR, readMaybe, readWithNamed, type MetadataReader, type MetadataTransaction, type RecordRef } from '../storage/metadata.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';
import type { Digest } from '../digest.js';
import { manifests, manifestTags, tags } from './keyspaces.js';
import type { ManifestRecord, TagRecord } from './records.js';

/** The address of the tag `repository:tag`, for a `getMany` (what `putTagInTransaction` reads). */
export function tagRef(repository: string, tag: string): RecordRef<TagRecord> {
  return [tags, key(repository, tag)];
}

/**
 * Points `repository:tag` at `digest` (creating, moving or refreshing the tag) and its index
 * entry with it; call inside a transaction.
 * @param now the tag's updatedAt (ms).
 */
export async function putTagInTransaction(tx: MetadataTransaction, repository: string, tag: string, digest: Digest, now: number): Promise<void> {
  const k = key(repository, tag);
  const old = await tx.get(tags, k);
  if (old && old.digest !== digest) tx.remove(manifestTags, key(repository, old.digest, tag));
  tx.put(tags, k, { digest, updatedAt: now });
  tx.put(manifestTags, key(repository, digest, tag), now);
}

/**
 * Removes `repository:tag` and its index entry (the manifest stays); call inside a transaction.
 * @returns false when there was no such tag (nothing changed).
 */
export async function removeTagInTransaction(tx: MetadataTransaction, repository: string, tag: string): Promise<boolean> {
  const k = key(repository, tag);
  const old = await tx.get(tags, k);
  if (!old) return false;
  tx.remove(tags, k);
  tx.remove(manifestTags, key(repository, old.digest, tag));
  return true;
}

/**
 * Removes every tag of `repository` that points at `digest`, read from the index (one range read
 * of this manifest's entries, whatever the repository's tag count); call inside a transaction.
 * @returns the tags removed, in lexical order.
 */
export async function removeTagsOfManifestInTransaction(tx: MetadataTransaction, repository: string, digest: Digest): Promise<string[]> {
  const found = await tagsOfManifest(tx, repository, digest);
  for (const tag of found) {
    tx.remove(tags, key(repository, tag));
    tx.remove(manifestTags, key(repository, digest, tag));
  }
  return found;
}

/**
 * Removes every tag of `repository` (app deletion); call inside a transaction.
 * @returns the number of tags removed.
 */
export async function removeTagsOfRepositoryInTransaction(tx: MetadataTransaction, repository: string): Promise<number> {
  const all = await tx.range(tags, { prefix: repository });
  for (const { key: k, value } of all) {
    tx.remove(tags, k);
    tx.remove(manifestTags, key(repository, value.digest, k.slice(repository.length + 1)));
  }
  return all.length;
}

/** The tags of `repository` pointing at `digest`, in lexical order (one index range read). */
export async function tagsOfManifest(reader: MetadataReader, repository: string, digest: Digest): Promise<string[]> {
  const prefix = key(repository, digest);
  return (await reader.range(manifestTags, { prefix })).map((e) => e.key.slice(prefix.length + 1));
}

/** The digest `repository:tag` points at, or undefined (one read). */
export function taggedDigest(reader: MetadataReader, repository: string, tag: string): MaybePromise<Digest | undefined> {
  return andThen(readMaybe(reader, tags, key(repository, tag)), (t) => t?.digest);
}

/** A tag's digest, and the manifest record of that digest when it was read together (`taggedManifest`). */
export interface TaggedManifest {
  /** undefined when no such tag. */
  digest: Digest | undefined;
  /** The manifest record (its value undefined when absent); left out when not read with the tag. */
  manifest?: { value: ManifestRecord | undefined };
}

/**
 * The digest `repository:tag` points at (undefined when no such tag) and, when the store read
 * it in the same round trip (`readWithNamed`: PostgreSQL, the tag not in its read cache), the
 * manifest record of that digest (`manifest.value` undefined when absent); otherwise
 * `manifest` is left out and the caller reads it as after `taggedDigest`. Synchronous when the
 * store reads synchronously.
 */
export function taggedManifest(reader: MetadataReader, repository: string, tag: string): MaybePromise<TaggedManifest> {
  return andThen(readWithNamed(reader, tags, key(repository, tag), 'digest', manifests), (r) => (r.named ? { digest: r.value?.digest, manifest: r.named } : { digest: r.value?.digest }));
}

/**
 * Tags of `repository` in lexical order strictly after `after` (from the first when undefined),
 * at most `limit` of them (one range read).
 */
export async function tagPage(reader: MetadataReader, repository: string, after: string | undefined, limit: number): Promise<string[]> {
  const start = after === undefined ? undefined : key(repository, after);
  const entries = await reader.range(tags, { prefix: repository, ...(start === undefined ? {} : { start }), limit: limit + 1 });
  return entries.filter((e) => e.key !== start).slice(0, limit).map((e) => e.key.slice(repository.length + 1));
}

/**
 * Moves every tag of the repositories whose names fall in `range` (an app's repositories,
 * rename.ts) to the repository `rename` names, with their index entries and updatedAt; call inside a transaction.
 * @returns the number of tags moved.
 */
export async function moveTagsInTransaction(tx: MetadataTransaction, range: { start: string; end: string }, rename: (repository: string) => string): Promise<number> {
  const all = await tx.range(tags, range);
  for (const { key: k, value } of all) {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    const repository = k.slice(0, cut), tag = k.slice(cut + 1);
    tx.remove(tags, k);
    tx.remove(manifestTags, key(repository, value.digest, tag));
    tx.put(tags, key(rename(repository), tag), value);
    tx.put(manifestTags, key(rename(repository), value.digest, tag), value.updatedAt);
  }
  return all.length;
}
