/**
 * The registry domain's schema migrations (run by engine/migrations.ts inside its one
 * transaction): the inverse blob-link index (schema 3), the tags-by-manifest index (4) and
 * manifest bytes stored as text (8).
 */
import { key, KEY_SEPARATOR, type MetadataTransaction } from '../storage/metadata.js';
import { blobRepositories, manifests, manifestTags, repositoryBlobs, tags } from './keyspaces.js';
import type { ManifestRecord } from './records.js';

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

/** A manifest record as builds before schema 8 stored it: the bytes as binary. */
type LegacyManifestRecord = Omit<ManifestRecord, 'text' | 'encoding'> & { bytes: Uint8Array };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Rewrites every manifest record that holds its bytes as binary (`bytes`, builds before schema 8)
 * to hold them as text (`text`, ManifestRecord): the UTF-8 decoding when the bytes are valid
 * UTF-8, else their base64 with `encoding: 'base64'` (older builds accepted such manifests), so
 * the bytes, and with them the digest, stay exactly what was pushed.
 * @returns records rewritten.
 */
export async function manifestBytesAsText(tx: MetadataTransaction): Promise<number> {
  let rewritten = 0;
  for (const { key: digest, value } of await tx.range(manifests)) {
    const legacy = value as unknown as Partial<LegacyManifestRecord> & ManifestRecord;
    if (!(legacy.bytes instanceof Uint8Array)) continue;
    const { bytes, ...rest } = legacy;
    let record: ManifestRecord;
    try {
      record = { ...rest, text: strictUtf8.decode(bytes) };
    } catch {
      record = { ...rest, text: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'), encoding: 'base64' };
    }
    tx.put(manifests, digest, record);
    rewritten++;
  }
  return rewritten;
}
