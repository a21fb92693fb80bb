/**
 * The one LMDB environment (data/lmdb) and its named databases. Every multi-record change is a
 * single LMDB transaction (`store.env.transaction(() => …)`), so registry, OAuth and formation
 * records are always mutually consistent. Keys with several parts join them with NUL (`\0`) so
 * a prefix range (`prefix\0` .. `prefix\x01`) lists one repository's entries.
 *
 * Record types live beside the code that owns them; this file only opens the databases.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Account, AuthorizationRecord, TokenRecord } from './auth/records.js';
import type { AppRecord } from './platform/records.js';
import type { BlobRecord, UploadRecord } from './blobs/records.js';
import type { ManifestRecord, RepositoryRecord, TagRecord } from './registry/records.js';

/** Current on-disk schema version; bump with an ordered migration in `migrate()`. */
export const SCHEMA_VERSION = 1;

/** Handles on every named database. */
export interface Store {
  env: RootDatabase;
  meta: Database<unknown, string>;
  accounts: Database<Account, string>;
  accountsByEmail: Database<string, string>;
  authorizations: Database<AuthorizationRecord, string>;
  /** sha256 hex of a token value → token record. Token values themselves are never stored. */
  tokens: Database<TokenRecord, string>;
  apps: Database<AppRecord, string>;
  appsByName: Database<string, string>;
  repositories: Database<RepositoryRecord, string>;
  /** `repository\0digest` → time linked: blobs a repository may serve (uploaded or mounted). */
  repositoryBlobs: Database<number, string>;
  /** `repository\0digest` → time pushed: manifests of a repository. */
  repositoryManifests: Database<number, string>;
  /** `repository\0tag` → tag record. */
  tags: Database<TagRecord, string>;
  /** manifest digest → manifest record (content-addressed, shared by repositories). */
  manifests: Database<ManifestRecord, string>;
  /** `config digest\0repository\0manifest digest` → time pushed: the image-id index. */
  images: Database<number, string>;
  /** blob digest → blob record with reference count. */
  blobs: Database<BlobRecord, string>;
  /** upload session id → session record. */
  uploads: Database<UploadRecord, string>;
  close(): Promise<void>;
}

/** Joins key parts with NUL. */
export function key(...parts: string[]): string {
  return parts.join('\0');
}

/** Range options selecting every key that starts with `prefix\0`. */
export function prefixRange(prefix: string): { start: string; end: string } {
  return { start: prefix + '\0', end: prefix + '\x01' };
}

/**
 * Opens (creating if needed) the environment under `dir`.
 * @param dir the data directory; the environment lives in `dir/lmdb`.
 */
export function openStore(dir: string): Store {
  const path = join(dir, 'lmdb');
  mkdirSync(path, { recursive: true });
  const env = open({ path, maxDbs: 32, mapSize: 64 * 1024 ** 3, encoding: 'msgpack' });
  const db = <V>(name: string) => env.openDB<V, string>(name, { encoding: 'msgpack' });
  const store: Store = {
    env,
    meta: db('meta'),
    accounts: db('accounts'),
    accountsByEmail: db('accounts-by-email'),
    authorizations: db('authorizations'),
    tokens: db('tokens'),
    apps: db('apps'),
    appsByName: db('apps-by-name'),
    repositories: db('repositories'),
    repositoryBlobs: db('repository-blobs'),
    repositoryManifests: db('repository-manifests'),
    tags: db('tags'),
    manifests: db('manifests'),
    images: db('images'),
    blobs: db('blobs'),
    uploads: db('uploads'),
    close: () => env.close(),
  };
  migrate(store);
  return store;
}

function migrate(store: Store): void {
  const version = store.meta.get('schema') as number | undefined;
  if (version === undefined) {
    store.meta.putSync('schema', SCHEMA_VERSION);
  } else if (version > SCHEMA_VERSION) {
    throw new Error(`data directory has schema version ${version}, newer than this build (${SCHEMA_VERSION}); upgrade Slipway`);
  }
}
