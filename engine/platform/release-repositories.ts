/**
 * The repository names a release's images carry (ReleaseImage.repository, `<app>/<type>`) follow
 * the app's name: an app rename (apps.ts `rename`) rewrites them in its transaction, so a
 * rollback's "still stored" check, GC's retention roots (retention.ts) and the release views
 * name the repositories the images now live in. The images themselves (config and manifest
 * digests) do not change.
 */
import type { MetadataTransaction } from '../storage/metadata.js';
import { releases } from './keyspaces.js';
import type { ReleaseRecord } from './records.js';

/**
 * Rewrites `<from>/<type>` to `<to>/<type>` in every release of app `appId` that names one
 * (one range read of the app's releases); call inside the rename's transaction.
 * @returns the number of releases rewritten.
 */
export async function renameReleaseRepositoriesInTransaction(tx: MetadataTransaction, appId: string, from: string, to: string): Promise<number> {
  let count = 0;
  for (const { key: k, value } of await tx.range(releases, { prefix: appId })) {
    const moved = renamedImages(value, from + '/', to + '/');
    if (moved === undefined) continue;
    tx.put(releases, k, { ...value, images: moved });
    count++;
  }
  return count;
}

/** The release's images with repositories under `fromPrefix` moved under `toPrefix`; undefined when none is. */
function renamedImages(release: ReleaseRecord, fromPrefix: string, toPrefix: string): ReleaseRecord['images'] | undefined {
  let changed = false;
  const out: ReleaseRecord['images'] = {};
  for (const [type, image] of Object.entries(release.images)) {
    if (image.repository.startsWith(fromPrefix)) {
      out[type] = { ...image, repository: toPrefix + image.repository.slice(fromPrefix.length) };
      changed = true;
    } else out[type] = image;
  }
  return changed ? out : undefined;
}
