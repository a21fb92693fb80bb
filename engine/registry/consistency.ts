/**
 * The registry's consistency checks for `slipway fsck` (server/ops/fsck.ts): every
 * (repository, manifest) pair has its manifest record, image-index entry, and a record and link
 * for each blob it names; blob `refs` and manifest `links` match the pairs; the link index
 * (links.ts) and the tag index (tags.ts) agree both ways, and every tag points at a manifest of
 * its repository. Reads page through the keyspaces outside a transaction, so while serving a
 * push committing during the run can show a transient mismatch.
 */
import { key, keyParts, type MetadataReader } from '../storage/metadata.js';
import { scanKeyspace } from '../storage/scan.js';
import type { Digest } from '../digest.js';
import { blobRecord, scanBlobRecords } from '../blobs/refs.js';
import { blobRepositories, images, manifests, manifestTags, repositoryBlobs, repositoryManifests, tags } from './keyspaces.js';

/** What a registry check can find (fsck reports them; none is repaired automatically). */
export type RegistryProblemKind =
  | 'manifest-missing' | 'blob-link-dangling' | 'repository-link-missing' | 'link-index'
  | 'blob-refs' | 'manifest-links' | 'image-index' | 'tag-dangling' | 'tag-index';

/** Receives one problem: its kind, what it is about (`repository@digest`, `repository:tag`, a digest) and a detail. */
export type ProblemSink = (kind: RegistryProblemKind, subject: string, detail: string) => void;

/**
 * Runs every registry check, reporting each problem to `add`.
 * @returns how many (repository, manifest) pairs and tags were checked.
 */
export async function checkRegistryRecords(reader: MetadataReader, add: ProblemSink): Promise<{ manifests: number; tags: number }> {
  const checked = { manifests: 0, tags: 0 };
  const holds = async (repo: string, digest: string) => (await reader.get(repositoryManifests, key(repo, digest))) !== undefined;

  // Repository manifests, their blobs and links; the counts the records keep.
  const refs = new Map<string, number>();
  const links = new Map<string, number>();
  for await (const { key: k } of scanKeyspace(reader, repositoryManifests)) {
    checked.manifests++;
    const [repo, digest] = keyParts(k) as [string, Digest];
    const m = await reader.get(manifests, digest);
    if (!m) { add('manifest-missing', `${repo}@${digest}`, 'the repository lists a manifest that has no record'); continue; }
    links.set(digest, (links.get(digest) ?? 0) + 1);
    if ((await reader.get(images, key(m.configDigest, repo, digest))) === undefined) add('image-index', `${repo}@${digest}`, `no image-index entry for config ${m.configDigest}`);
    for (const b of m.blobs) {
      refs.set(b, (refs.get(b) ?? 0) + 1);
      if (!(await blobRecord(reader, b))) add('blob-link-dangling', `${repo}@${digest}`, `names blob ${b}, which has no record`);
      if ((await reader.get(repositoryBlobs, key(repo, b))) === undefined) add('repository-link-missing', `${repo}@${digest}`, `names blob ${b}, which is not linked to ${repo}`);
    }
  }
  for await (const { key: digest, value } of scanBlobRecords(reader)) {
    const want = refs.get(digest) ?? 0;
    if (value.refs !== want) add('blob-refs', digest, `record counts ${value.refs} references, manifests make ${want}`);
  }
  for await (const { key: digest, value } of scanKeyspace(reader, manifests)) {
    const want = links.get(digest) ?? 0;
    if (value.links !== want) add('manifest-links', digest, `record counts ${value.links} repositories, ${want} hold it`);
  }
  for await (const { key: k } of scanKeyspace(reader, images)) {
    const [, repo, digest] = keyParts(k);
    if (!(await holds(repo!, digest!))) add('image-index', `${repo}@${digest}`, 'image-index entry for a manifest the repository does not hold');
  }

  // The link index both ways.
  for await (const { key: k } of scanKeyspace(reader, repositoryBlobs)) {
    const [repo, digest] = keyParts(k);
    if ((await reader.get(blobRepositories, key(digest!, repo!))) === undefined) add('link-index', `${repo}@${digest}`, 'linked by repository, missing from the by-blob index');
    if (!(await blobRecord(reader, digest as Digest))) add('blob-link-dangling', `${repo}@${digest}`, 'the repository links a blob that has no record');
  }
  for await (const { key: k } of scanKeyspace(reader, blobRepositories)) {
    const [digest, repo] = keyParts(k);
    if ((await reader.get(repositoryBlobs, key(repo!, digest!))) === undefined) add('link-index', `${repo}@${digest}`, 'in the by-blob index, not linked by the repository');
  }

  // Tags and the tag index.
  for await (const { key: k, value } of scanKeyspace(reader, tags)) {
    checked.tags++;
    const [repo, tag] = keyParts(k);
    if (!(await holds(repo!, value.digest))) add('tag-dangling', `${repo}:${tag}`, `points at ${value.digest}, not a manifest of ${repo}`);
    if ((await reader.get(manifestTags, key(repo!, value.digest, tag!))) === undefined) add('tag-index', `${repo}:${tag}`, 'missing from the tag index');
  }
  for await (const { key: k } of scanKeyspace(reader, manifestTags)) {
    const [repo, digest, tag] = keyParts(k);
    if ((await reader.get(tags, key(repo!, tag!)))?.digest !== digest) add('tag-index', `${repo}:${tag}`, `tag index names ${digest}, the tag does not point there`);
  }
  return checked;
}
