/**
 * Moving an app's repositories when the app is renamed (engine/platform/apps.ts `rename`;
 * docs/apps.md "Renaming an app"). Every record keyed by a repository name `<old>/<type>` moves
 * to `<new>/<type>` in the caller's transaction: the repository records, the manifest links
 * (with their push times, which image retention ages), the image-id index, the tags and their
 * manifest → tags index (tags.ts), the blob links and their inverse (links.ts). Manifest and
 * blob records are content-addressed and keep their counts (the same number of repositories
 * hold them). Upload sessions are not moved: a session started under the old name links its
 * blob under the name only while an app holds it (uploads' `linkGuard`, server/main.ts), else
 * the client starts again under the new name.
 */
import { key, KEY_SEPARATOR, type MetadataReader, type MetadataTransaction, type RecordRef } from '../storage/metadata.js';
import { fail } from '../errors.js';
import type { Digest } from '../digest.js';
import { images, manifests, repositories, repositoryManifests } from './keyspaces.js';
import { moveTagsInTransaction } from './tags.js';
import { moveLinksInTransaction } from './links.js';

/** The key range of every repository of app `appName` and of every `repository␟…` key of them (`/` < `0`). */
export function appRepositoryRange(appName: string): { start: string; end: string } {
  return { start: appName + '/', end: appName + '0' };
}

/**
 * The record saying which app holds an app name now (its id; the platform's name index:
 * engine/platform/app-names.ts `appNameRef`). Registry writes that link a blob or a manifest
 * into `<app>/<type>` read it in their transaction, so a write ordered after a rename of its
 * app fails (or links nothing) instead of landing under the old name.
 */
export type AppNameRef = (appName: string) => RecordRef<string>;

/** The app part of a repository name `<app>/<type>`. */
export function appOfRepository(repository: string): string {
  return repository.slice(0, repository.indexOf('/'));
}

/**
 * Inside a transaction that writes into `repository` for app `appId`: the app must still hold
 * the name (read from the prefetched `ref`, so no extra round trip on PostgreSQL).
 * @throws NAME_UNKNOWN (404) when the app was renamed (or deleted) meanwhile.
 */
export async function requireNameHeld(reader: MetadataReader, ref: RecordRef<string>, repository: string, appId: string): Promise<void> {
  if (await reader.get(ref[0], ref[1]) !== appId) {
    throw fail('NAME_UNKNOWN', `repository name not known to registry: ${repository} (its app was renamed or deleted meanwhile; push to the app's current name)`, { name: repository });
  }
}

/** What a rename moved (counts). */
export interface MovedRepositories {
  repositories: number;
  manifests: number;
  tags: number;
  links: number;
}

/**
 * Moves the repositories of app `from` to app `to` (see the header); call inside a transaction
 * that also renames the app. Reads: the app's repository, manifest-link, tag and blob-link
 * ranges and each held manifest's record and image-id entry (one getMany).
 */
export async function moveRepositoriesInTransaction(tx: MetadataTransaction, from: string, to: string): Promise<MovedRepositories> {
  const range = appRepositoryRange(from);
  const rename = (repository: string) => to + repository.slice(from.length);
  const repos = await tx.range(repositories, range);
  for (const { key: name, value } of repos) {
    tx.remove(repositories, name);
    tx.put(repositories, rename(name), { ...value, name: rename(name) });
  }
  const held = (await tx.range(repositoryManifests, range)).map(({ key: k, value: at }) => {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    return { key: k, repository: k.slice(0, cut), digest: k.slice(cut + 1) as Digest, at };
  });
  const records = await tx.getMany(held.map((h) => [manifests, h.digest] as const));
  const indexKeys = held.map((h, i) => records[i] ? key(records[i]!.configDigest, h.repository, h.digest) : undefined);
  const indexed = await tx.getMany(indexKeys.filter((k): k is string => k !== undefined).map((k) => [images, k] as const));
  let j = 0;
  held.forEach((h, i) => {
    tx.remove(repositoryManifests, h.key);
    tx.put(repositoryManifests, key(rename(h.repository), h.digest), h.at);
    const old = indexKeys[i];
    if (old === undefined) return;
    const at = indexed[j++];
    tx.remove(images, old);
    tx.put(images, key(records[i]!.configDigest, rename(h.repository), h.digest), at ?? h.at);
  });
  const tags = await moveTagsInTransaction(tx, range, rename);
  const links = await moveLinksInTransaction(tx, range, rename);
  return { repositories: repos.length, manifests: held.length, tags, links };
}
