/**
 * Names the images that keep a blob, for a dry run's report (`slipway gc --dry-run`): GC itself
 * only needs a blob's reference count (engine/registry/gc.ts), an operator wants to know which
 * images hold it.
 */
import type { MetadataReader } from '../storage/metadata.js';
import { KEY_SEPARATOR, key } from '../storage/metadata.js';
import { scanKeyspace } from '../storage/scan.js';
import { manifests, repositoryManifests } from './keyspaces.js';
import type { GcReport } from './gc.js';

/** At most this many images are named per blob (`references` counts them all). */
export const NAMED_REFERRERS = 3;

/**
 * Fills `referencedBy` (up to NAMED_REFERRERS `repository@manifest digest`, in key order) and
 * `references` (every image that stays) of each `referenced` entry of `report.keptBlobs`: one
 * scan of the repository → manifest pairs, skipping the images the run would delete, and one
 * read per distinct manifest. Outside a transaction (a dry run changes nothing).
 * @throws what the store throws
 */
export async function nameReferrers(reader: MetadataReader, report: GcReport): Promise<void> {
  const wanted = new Map<string, { referencedBy: string[]; references: number }>();
  for (const b of report.keptBlobs) if (b.reason === 'referenced') wanted.set(b.digest, b);
  if (wanted.size === 0) return;
  const deleted = new Set(report.deletedImages.map((i) => key(i.repository, i.digest)));
  const blobsOf = new Map<string, readonly string[]>();
  for await (const { key: k } of scanKeyspace(reader, repositoryManifests)) {
    if (deleted.has(k)) continue;
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    const digest = k.slice(cut + 1);
    let blobs = blobsOf.get(digest);
    if (!blobs) blobsOf.set(digest, blobs = (await reader.get(manifests, digest))?.blobs ?? []);
    for (const b of blobs) {
      const entry = wanted.get(b);
      if (!entry) continue;
      entry.references++;
      if (entry.referencedBy.length < NAMED_REFERRERS) entry.referencedBy.push(`${k.slice(0, cut)}@${digest}`);
    }
  }
}
