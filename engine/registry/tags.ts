/**
 * Tags and their reverse index. A tag is two keys written and removed together, only by the
 * functions below and only inside one write transaction, so the index never disagrees with the
 * tags (a crash commits both or neither):
 * - `tags` `repository␟tag` → tag record (digest, updatedAt ms): what a pull by tag resolves;
 * - `manifestTags` `repository␟digest␟tag` → the tag's updatedAt (ms): the tags of one manifest
 *   in one repository, so removing a manifest (DELETE by digest, app deletion, GC) reads only
 *   its own tags instead of every tag of the repository.
 * `␟` is KEY_SEPARATOR (U+001F); no repository name, digest or tag contains it, so the tag is
 * what follows the last separator. Re-tagging (a PUT of `repository:tag` naming another digest)
 * moves the index entry from the old digest to the new one.
 */
import { key, prefixRange, KEY_SEPARATOR, type Store } from '../store.js';
import type { Digest } from '../digest.js';

/**
 * Points `repository:tag` at `digest` (creating, moving or refreshing the tag) and its index
 * entry with it; call inside a write transaction.
 * @param now the tag's updatedAt (ms).
 */
export function putTagInTransaction(store: Store, repository: string, tag: string, digest: Digest, now: number): void {
  const k = key(repository, tag);
  const old = store.tags.get(k);
  if (old && old.digest !== digest) store.manifestTags.remove(key(repository, old.digest, tag));
  store.tags.put(k, { digest, updatedAt: now });
  store.manifestTags.put(key(repository, digest, tag), now);
}

/**
 * Removes `repository:tag` and its index entry (the manifest stays); call inside a write
 * transaction.
 * @returns false when there was no such tag (nothing changed).
 */
export function removeTagInTransaction(store: Store, repository: string, tag: string): boolean {
  const k = key(repository, tag);
  const old = store.tags.get(k);
  if (!old) return false;
  store.tags.remove(k);
  store.manifestTags.remove(key(repository, old.digest, tag));
  return true;
}

/**
 * Removes every tag of `repository` that points at `digest`, read from the index (one range read
 * of this manifest's entries, whatever the repository's tag count); call inside a write
 * transaction.
 * @returns the tags removed, in lexical order.
 */
export function removeTagsOfManifestInTransaction(store: Store, repository: string, digest: Digest): string[] {
  const tags = tagsOfManifest(store, repository, digest);
  for (const tag of tags) removeTagInTransaction(store, repository, tag);
  return tags;
}

/**
 * Removes every tag of `repository` (app deletion); call inside a write transaction.
 * @returns the number of tags removed.
 */
export function removeTagsOfRepositoryInTransaction(store: Store, repository: string): number {
  const prefix = repository.length + 1;
  const tags = [...store.tags.getKeys(prefixRange(repository))].map((k) => k.slice(prefix));
  for (const tag of tags) removeTagInTransaction(store, repository, tag);
  return tags.length;
}

/** The tags of `repository` pointing at `digest`, in lexical order (one index range read). */
export function tagsOfManifest(store: Store, repository: string, digest: Digest): string[] {
  const prefix = key(repository, digest);
  return [...store.manifestTags.getKeys(prefixRange(prefix))].map((k) => k.slice(prefix.length + 1));
}

/**
 * Builds the `manifestTags` index from every tag record (store migration 3 → 4; idempotent);
 * call inside a write transaction.
 * @returns the number of tags indexed.
 */
export function indexManifestTagsInTransaction(store: Store): number {
  let n = 0;
  for (const { key: k, value } of store.tags.getRange()) {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    store.manifestTags.put(key(k.slice(0, cut), value.digest, k.slice(cut + 1)), value.updatedAt);
    n++;
  }
  return n;
}
