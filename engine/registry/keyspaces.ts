/**
 * The registry domain's keyspaces: Repositories, their blob links, manifests, tags and the image-id index. Only modules of engine/registry/ may import this
 * file (test/engine/import-rules.test.ts); other domains call this domain's service functions.
 * Names are the LMDB database names the data has always had (docs/storage.md).
 */
import { keyspace } from '../storage/metadata.js';
import type { Totals } from '../storage/running-totals.js';
import type { GraceRecord, GraceSetting, ManifestRecord, RepositoryRecord, TagRecord } from './records.js';

/** repository name → repository record. */
export const repositories = keyspace<RepositoryRecord>('registry', 'repositories');
/** `repository␟digest` → time linked (ms): blobs a repository may serve (uploaded or mounted). */
export const repositoryBlobs = keyspace<number>('registry', 'repository-blobs');
/** `digest␟repository` → time linked (ms): the inverse of repositoryBlobs; both change together (links.ts). */
export const blobRepositories = keyspace<number>('registry', 'blob-repositories');
/** `repository␟digest` → time pushed (ms): manifests of a repository. */
export const repositoryManifests = keyspace<number>('registry', 'repository-manifests');
/** `repository␟tag` → tag record. Written only through tags.ts. */
export const tags = keyspace<TagRecord>('registry', 'tags');
/** `repository␟manifest digest␟tag` → the tag's updatedAt (ms); changes only with tags (tags.ts). */
export const manifestTags = keyspace<number>('registry', 'manifest-tags');
/** manifest digest → manifest record (content-addressed, shared by repositories). */
export const manifests = keyspace<ManifestRecord>('registry', 'manifests');
/** `config digest␟repository␟manifest digest` → time pushed (ms): the image-id index. */
export const images = keyspace<number>('registry', 'images');
/** node name → the GC grace period that node announced (gc-grace.ts). */
export const gcGrace = keyspace<GraceRecord>('registry', 'gc-grace');
/** `grace` → the cluster's GC grace setting (gc-grace.ts); absent until an operator sets one. */
export const gcSettings = keyspace<GraceSetting>('registry', 'gc-settings');
/** Running totals of the manifest records (count, bytes): `base` and one delta per changing transaction (storage/running-totals.ts). */
export const manifestTotalsKeyspace = keyspace<Totals>('registry', 'manifest-totals');
