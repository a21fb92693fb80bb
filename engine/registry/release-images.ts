/**
 * The registry's answers to the platform when it releases images (docs/rules.md Endpoints 7-8,
 * What the service does 6): which pushed image an image id names for an app, and whether a
 * released image is still stored. The platform domain calls these instead of reading the
 * registry's keyspaces (the image-id index, manifests, repository manifests).
 */
import { fail } from '../errors.js';
import { isDigest, type Digest } from '../digest.js';
import { key, keyParts, type MetadataReader } from '../storage/metadata.js';
import { images, manifests, repositoryManifests } from './keyspaces.js';
import { isSupportedArchitecture } from './image-info.js';
import type { ImageInfo } from './records.js';
import { tagsOfManifest } from './tags.js';

/** An image id resolved to the manifest that carried it. */
export interface ResolvedImage {
  /** The image id: the config blob digest (`sha256:<hex>`). */
  configDigest: string;
  manifestDigest: string;
  /** Repository it was pushed to (`<app>/<type>` or another repository of the app). */
  repository: string;
  /** What inspection found in the image (entrypoint, cmd, layers, whiteouts…). */
  info: ImageInfo;
  /** True when the caller sent the manifest digest and it was resolved to the image id. */
  byManifestDigest: boolean;
  /** Tags of `repository` naming the manifest when it was resolved, in lexical order (may be empty). */
  tags: string[];
}

/** The newest push of image id `configDigest` to app `appName`, `<app>/<type>` first; only of `manifestDigest` when given. */
async function findPush(reader: MetadataReader, appName: string, preferredRepository: string, configDigest: string, manifestDigest?: string) {
  let best: { repository: string; manifestDigest: string; at: number } | undefined;
  for (const { key: k, value: at } of await reader.range(images, { prefix: configDigest })) {
    const [, repository, digest] = keyParts(k) as [string, string, string];
    if (!repository.startsWith(appName + '/') || (manifestDigest !== undefined && digest !== manifestDigest)) continue;
    const preferred = repository === preferredRepository;
    const bestPreferred = best?.repository === preferredRepository;
    if (!best || (preferred && !bestPreferred) || (preferred === bestPreferred && at > best.at)) best = { repository, manifestDigest: digest, at };
  }
  return best;
}

/**
 * Finds the image `imageId` among those pushed to the repositories of app `appName`,
 * preferring `<app>/<type>`, then the newest push (docs/rules.md Endpoints 8.2: an image pushed
 * without a process type in its tag is releasable only by its id). `imageId` is the image id
 * (the config digest, `docker inspect`'s `Id`) or, as a convenience, the digest of a manifest
 * pushed to the app (what `docker push` and `skopeo inspect` print), resolved to the image id it
 * names (`byManifestDigest`), with the repository's tags that name the manifest now (`tags`, from
 * the manifest → tags index). Reads one range of the image-id index, one or two manifests and one
 * range of the tag index;
 * usable outside or inside a transaction.
 * @param registryHost the registry's public `host[:port]`, named in the error for an unknown image
 * @throws INVALID_PARAMS when the id is malformed, not pushed to the app, or not x86_64
 *         (isSupportedArchitecture).
 */
export async function resolveImage(reader: MetadataReader, appName: string, type: string, imageId: string, registryHost = 'the registry'): Promise<ResolvedImage> {
  if (!isDigest(imageId)) throw fail('INVALID_PARAMS', `docker_image must be an image id of the form sha256:<64 hex characters>, got "${imageId.slice(0, 80)}"`);
  const preferredRepository = `${appName}/${type}`;
  let configDigest = imageId;
  let best = await findPush(reader, appName, preferredRepository, imageId);
  let byManifestDigest = false;
  if (!best) {
    // Not an image id pushed to the app: a manifest digest of one?
    const named = await reader.get(manifests, imageId);
    if (named) {
      best = await findPush(reader, appName, preferredRepository, named.configDigest, imageId);
      configDigest = named.configDigest;
      byManifestDigest = best !== undefined;
    }
  }
  const manifest = best && await reader.get(manifests, best.manifestDigest);
  if (!best || !manifest) {
    throw fail('INVALID_PARAMS', `docker_image ${imageId} is neither the image id nor the manifest digest of an image pushed to app ${appName}; `
      + `push it to ${registryHost}/${preferredRepository} first, then send its image id (\`docker inspect --format '{{.Id}}' ${registryHost}/${preferredRepository}\`) or the digest \`docker push\` printed`);
  }
  if (!isSupportedArchitecture(manifest.image.architecture)) {
    throw fail('INVALID_PARAMS', `docker_image ${imageId}: unsupported architecture "${manifest.image.architecture}"; only x86_64 images are supported`);
  }
  const tags = await tagsOfManifest(reader, best.repository, best.manifestDigest as Digest);
  return { configDigest, manifestDigest: best.manifestDigest, repository: best.repository, info: manifest.image, byManifestDigest, tags };
}

/**
 * True while manifest `manifestDigest` is still stored in `repository`. Read inside the
 * releasing transaction, so a release and the GC or a manifest delete are ordered: a release
 * never commits an image deleted under it (engine/registry/gc.ts).
 */
export async function imageStoredInTransaction(reader: MetadataReader, repository: string, manifestDigest: string): Promise<boolean> {
  return (await reader.get(repositoryManifests, key(repository, manifestDigest))) !== undefined;
}
