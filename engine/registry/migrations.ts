/**
 * The registry domain's schema migrations (run by engine/migrations.ts inside its one
 * transaction): the inverse blob-link index (schema 3) and the tags-by-manifest index (4).
 */
import { key, KEY_SEPARATOR, type MetadataTransaction } from '../storage/metadata.js';
import { blobRepositories, manifestTags, repositoryBlobs, tags } from './keyspaces.js';

/** Writes `digest␟repository` for every `repository␟digest` link. @returns links indexed. */
export async function indexBlobLinks(tx: MetadataTransaction): Promise<number> {
  const links = await tx.range(repositoryBlobs);
  for (const { key: k, value: linkedAt } of links) {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    tx.put(blobRepositories, key(k.slice(cut + 1), k.slice(0, cut)), linkedAt);
  }
  return links.length;
}

/** Writes `repository␟manifest digest␟tag` for every tag. @returns tags indexed. */
export async function indexManifestTags(tx: MetadataTransaction): Promise<number> {
  const all = await tx.range(tags);
  for (const { key: k, value } of all) {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    tx.put(manifestTags, key(k.slice(0, cut), value.digest, k.slice(cut + 1)), value.updatedAt);
  }
  return all.length;
}
