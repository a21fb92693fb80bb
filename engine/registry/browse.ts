/**
 * What a person browsing an app's registry sees (the dashboard's registry view): the app's
 * repositories, each repository's images (manifests) with their tags, sizes, push times, layers
 * and the warnings image inspection recorded at push. Read-only, outside transactions: each
 * answer is a few range reads and one read per image shown, so the totals are not one snapshot
 * while pushes commit. Bounded: at most MAX_REPOSITORIES repositories, MAX_SCANNED images and
 * tags per repository, and MAX_SHOWN images detailed (newest pushes first); `truncated` says
 * when more exist (they are still served by the registry API's tag list and catalog).
 */
import { isDigest, type Digest } from '../digest.js';
import { key, type MetadataReader } from '../storage/metadata.js';
import { parseRepositoryName } from './names.js';
import { blobRecordRefs } from '../blobs/refs.js';
import { manifestBytes, type Descriptor, type ImageInfo, type ManifestRecord } from './records.js';
import { manifests, manifestTags, repositories, repositoryManifests, tags } from './keyspaces.js';

/** Repositories listed per app. */
export const MAX_REPOSITORIES = 100;
/** Manifests and tags read per repository (their keys only: a few bytes each). */
export const MAX_SCANNED = 1000;
/** Images detailed per repository page (one manifest read each). */
export const MAX_SHOWN = 50;

/** One tag of an image. */
export interface TagView {
  tag: string;
  /** When the tag was last pointed at this image, ms since epoch. */
  updatedAt: number;
}

/** An image (a manifest held by one repository) as the dashboard shows it. */
export interface ImageView {
  repository: string;
  /** The manifest digest (what `docker pull name@digest` takes). */
  digest: Digest;
  /** The image id: the config blob digest (what a release names). */
  configDigest: Digest;
  mediaType: string;
  /** When this repository first received the manifest, ms since epoch (re-pushing it does not change it). */
  pushedAt: number;
  /** Tags of this repository naming it, in lexical order. */
  tags: TagView[];
  /** Config descriptor (its size counts in `size`). */
  config: Descriptor;
  layers: Descriptor[];
  /** Compressed bytes: config plus every layer as the manifest lists them. */
  size: number;
  /** What inspection found at push (architecture, warnings, unscanned layers…). */
  info: ImageInfo;
}

/** One repository of an app with the figures of its list row. */
export interface RepositoryView {
  name: string;
  processType: string;
  /** Images (manifests) held, up to MAX_SCANNED. */
  images: number;
  /** Tags, up to MAX_SCANNED. */
  tags: number;
  /** Newest push, ms since epoch (0 without images). */
  lastPushAt: number;
  createdAt: number;
}

/** The repositories of app `appName` in name order (at most MAX_REPOSITORIES; `truncated` when more). */
export async function repositoriesOfApp(reader: MetadataReader, appName: string): Promise<{ repositories: RepositoryView[]; truncated: boolean }> {
  const found = await reader.range(repositories, { start: appName + '/', end: appName + '0', limit: MAX_REPOSITORIES + 1 });
  const out = await Promise.all(found.slice(0, MAX_REPOSITORIES).map(async ({ key: name, value }) => {
    const [pushes, tagged] = await Promise.all([
      reader.range(repositoryManifests, { prefix: name, limit: MAX_SCANNED }),
      reader.range(tags, { prefix: name, limit: MAX_SCANNED }),
    ]);
    return {
      name, processType: parseRepositoryName(name).processType, images: pushes.length, tags: tagged.length,
      lastPushAt: pushes.reduce((m, p) => Math.max(m, p.value), 0), createdAt: value.createdAt,
    };
  }));
  return { repositories: out, truncated: found.length > MAX_REPOSITORIES };
}

/**
 * The images of `repository`, newest push first (at most MAX_SHOWN detailed; `truncated` when
 * more exist), each with its tags.
 */
export async function imagesOfRepository(reader: MetadataReader, repository: string): Promise<{ images: ImageView[]; truncated: boolean }> {
  const [pushes, tagged] = await Promise.all([
    reader.range(repositoryManifests, { prefix: repository, limit: MAX_SCANNED + 1 }),
    reader.range(tags, { prefix: repository, limit: MAX_SCANNED }),
  ]);
  const tagsOf = new Map<string, TagView[]>();
  for (const { key: k, value } of tagged) {
    const list = tagsOf.get(value.digest) ?? [];
    list.push({ tag: k.slice(repository.length + 1), updatedAt: value.updatedAt });
    tagsOf.set(value.digest, list);
  }
  const newest = pushes.slice(0, MAX_SCANNED)
    .map(({ key: k, value }) => ({ digest: k.slice(repository.length + 1) as Digest, pushedAt: value }))
    .sort((a, b) => b.pushedAt - a.pushedAt || (a.digest < b.digest ? -1 : 1));
  const shown = newest.slice(0, MAX_SHOWN);
  const records = await reader.getMany(shown.map((p) => [manifests, p.digest] as const));
  const images: ImageView[] = [];
  shown.forEach((p, i) => {
    const record = records[i];
    if (record) images.push(view(repository, p.digest, p.pushedAt, record, tagsOf.get(p.digest) ?? []));
  });
  return { images, truncated: pushes.length > MAX_SHOWN };
}

/**
 * One image of `repository` by manifest digest, or undefined when the repository does not hold
 * it (or `digest` is not a digest). Two reads: its push and record, then its tags.
 */
export async function imageOfRepository(reader: MetadataReader, repository: string, digest: string): Promise<ImageView | undefined> {
  if (!isDigest(digest)) return undefined;
  const [pushedAt, record] = await reader.getMany([[repositoryManifests, key(repository, digest)], [manifests, digest]] as const);
  if (pushedAt === undefined || !record) return undefined;
  // The manifest → tags index (tags.ts): this image's tags only, whatever the repository's tag count.
  const prefix = key(repository, digest);
  const own = (await reader.range(manifestTags, { prefix, limit: MAX_SCANNED })).map((t) => ({ tag: t.key.slice(prefix.length + 1), updatedAt: t.value }));
  return view(repository, digest, pushedAt, record, own);
}

function view(repository: string, digest: Digest, pushedAt: number, record: ManifestRecord, tagViews: TagView[]): ImageView {
  const config = configDescriptor(record);
  return {
    repository, digest, configDigest: record.configDigest, mediaType: record.mediaType, pushedAt, tags: tagViews,
    config, layers: record.layers, size: config.size + record.layers.reduce((s, l) => s + l.size, 0), info: record.image,
  };
}

/** The config descriptor of a stored manifest (from its bytes: the record keeps only the digest). */
function configDescriptor(record: ManifestRecord): Descriptor {
  const parsed = JSON.parse(manifestBytes(record).toString('utf8')) as { config?: Partial<Descriptor> };
  const c = parsed.config ?? {};
  return { mediaType: typeof c.mediaType === 'string' ? c.mediaType : '', digest: record.configDigest, size: typeof c.size === 'number' ? c.size : 0 };
}

/** What deleting an image would leave for GC: its distinct blobs and those no other image references. */
export interface BlobShare {
  /** Distinct blobs (config and layers) the image names, and their bytes. */
  blobs: number;
  bytes: number;
  /** Of those, the blobs whose only reference is this image (refs 1), and their bytes: GC frees them after a delete. */
  unshared: number;
  unsharedBytes: number;
}

/**
 * How many of the image's blobs only it references (engine/registry/registry.ts: a blob's
 * `refs` counts the (repository, manifest) pairs naming it, once per pair). One read of the
 * blob records.
 */
export async function blobShare(reader: MetadataReader, image: { config: Descriptor; layers: readonly Descriptor[] }): Promise<BlobShare> {
  const sizes = new Map<Digest, number>([[image.config.digest, image.config.size], ...image.layers.map((l) => [l.digest, l.size] as const)]);
  const digests = [...sizes.keys()];
  const records = await reader.getMany(blobRecordRefs(digests));
  const share: BlobShare = { blobs: 0, bytes: 0, unshared: 0, unsharedBytes: 0 };
  digests.forEach((d, i) => {
    const size = records[i]?.size ?? sizes.get(d)!;
    share.blobs++;
    share.bytes += size;
    if ((records[i]?.refs ?? 0) <= 1) { share.unshared++; share.unsharedBytes += size; }
  });
  return share;
}
