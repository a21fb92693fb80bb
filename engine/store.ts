/**
 * The one LMDB environment (data/lmdb) and its named databases. Every multi-record change is a
 * single LMDB transaction (`store.env.transaction(() => …)`), so registry, OAuth and formation
 * records are always mutually consistent. Keys with several parts join them with U+001F (unit
 * separator; no name, tag or digest may contain it) so a prefix range (`prefix\x1f` ..
 * `prefix\x20`) lists one repository's entries. Not NUL: lmdb-js's ordered-binary key encoding
 * uses NUL to separate array elements, so a NUL-joined string would read back as an array.
 *
 * Record types and index writers live beside the code that owns them; this file opens the
 * databases and runs the schema migrations (engine/migrations.ts).
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Account, AuthorizationRecord, TokenRecord } from './identity/records.js';
import type { AppRecord, FormationRecord, ReleaseRecord } from './platform/records.js';
import type { MembershipRecord, TeamRecord } from './platform/teams.js';
import type { BlobRecord, UploadRecord } from './blobs/records.js';
import type { ManifestRecord, RepositoryRecord, TagRecord } from './registry/records.js';
import type { ClientRecord, SignInState, WebSessionRecord } from './oauth/records.js';
import { LmdbMetadataStore } from './storage/lmdb-metadata.js';
import type { MetadataStore } from './storage/metadata.js';
import { migrate } from './migrations.js';
import { DATA_DIR_MODE, secureDataDir } from './data-dir.js';

/** Handles on every named database. */
export interface Store {
  /**
   * The metadata contract over this environment (engine/storage/metadata.ts): what the domains
   * use. The LMDB database handles below are the pre-contract access path, being retired domain
   * by domain; new code uses `metadata`.
   */
  metadata: MetadataStore;
  env: RootDatabase;
  meta: Database<unknown, string>;
  accounts: Database<Account, string>;
  accountsByEmail: Database<string, string>;
  authorizations: Database<AuthorizationRecord, string>;
  /** sha256 hex of a token value → token record. Token values themselves are never stored. */
  tokens: Database<TokenRecord, string>;
  /** `account id␟authorization id` → created at: an account's authorizations. */
  authorizationsByAccount: Database<number, string>;
  /** `client id␟authorization id` → created at: web-flow authorizations of a client. */
  authorizationsByClient: Database<number, string>;
  /**
   * `team id␟authorization id` → created at: a team's authorizations (revoked ones included,
   * like the other authorization indexes). Written with the record (auth/authorizations.ts).
   */
  authorizationsByTeam: Database<number, string>;
  /** OAuth client id → client record (the secret only as a hash). */
  clients: Database<ClientRecord, string>;
  /** `owner account id␟client id` → created at. */
  clientsByOwner: Database<number, string>;
  /** sha256 hex of a session cookie value → auth-host sign-in session. */
  webSessions: Database<WebSessionRecord, string>;
  /** normalised e-mail → failed sign-in count, lockout and last TOTP step. */
  signIns: Database<SignInState, string>;
  apps: Database<AppRecord, string>;
  appsByName: Database<string, string>;
  repositories: Database<RepositoryRecord, string>;
  /** `repository␟digest` → time linked: blobs a repository may serve (uploaded or mounted). */
  repositoryBlobs: Database<number, string>;
  /**
   * `digest␟repository` → time linked: the inverse of `repositoryBlobs` (which repositories link
   * a blob; GC). Both change only together, in registry/links.ts, inside one transaction.
   */
  blobRepositories: Database<number, string>;
  /** `repository␟digest` → time pushed: manifests of a repository. */
  repositoryManifests: Database<number, string>;
  /** `repository␟tag` → tag record. Written only through registry/tags.ts. */
  tags: Database<TagRecord, string>;
  /**
   * `repository␟manifest digest␟tag` → the tag's updatedAt (ms): the tags pointing at each
   * manifest of a repository (removing a manifest reads only its own tags). Changes only with
   * `tags`, in registry/tags.ts, inside the same transaction.
   */
  manifestTags: Database<number, string>;
  /** manifest digest → manifest record (content-addressed, shared by repositories). */
  manifests: Database<ManifestRecord, string>;
  /** `config digest␟repository␟manifest digest` → time pushed: the image-id index. */
  images: Database<number, string>;
  /** blob digest → blob record with reference count. */
  blobs: Database<BlobRecord, string>;
  /** upload session id → session record. */
  uploads: Database<UploadRecord, string>;
  /** `appId␟version` (version zero-padded to 10 digits) → release record. */
  releases: Database<ReleaseRecord, string>;
  /** `appId␟process type` → formation entry. */
  formations: Database<FormationRecord, string>;
  /** team id → team; team name → id. */
  teams: Database<TeamRecord, string>;
  teamsByName: Database<string, string>;
  /** `teamId␟accountId` → membership; `accountId␟teamId` → role (the account's teams). */
  memberships: Database<MembershipRecord, string>;
  membershipsByAccount: Database<string, string>;
  /**
   * authorization id → when it last authenticated a request (ms; at most once a minute, see
   * auth/usage.ts). Informational: absent means never recorded.
   */
  authorizationUse: Database<number, string>;
  /** appId → config vars (name → value). Runtime secrets: readable only with *-protected or global scope. */
  configVars: Database<Record<string, string>, string>;
  close(): Promise<void>;
}

/** Separator of multi-part keys. */
export const KEY_SEPARATOR = '\x1f';

/** Joins key parts with the separator. */
export function key(...parts: string[]): string {
  return parts.join(KEY_SEPARATOR);
}

/** Range options selecting every key that starts with `prefix` + separator. */
export function prefixRange(prefix: string): { start: string; end: string } {
  return { start: prefix + KEY_SEPARATOR, end: prefix + '\x20' };
}

/**
 * Opens (creating if needed) the environment under `dir`.
 * The data directory's permissions are made owner-only first (engine/data-dir.ts).
 * @param dir the data directory; the environment lives in `dir/lmdb`.
 */
export async function openStore(dir: string): Promise<Store> {
  secureDataDir(dir);
  const path = join(dir, 'lmdb');
  mkdirSync(path, { recursive: true, mode: DATA_DIR_MODE });
  // overlappingSync off: a write's promise then resolves only once its commit is on disk, so
  // nothing is acknowledged (a pushed manifest, a revocation) that a power loss could undo. With
  // lmdb-js's Linux default (on) it resolves at commit and the sync follows later. Measured
  // cost here: a few tenths of a millisecond on a manifest PUT (fdatasync p50 0.08 ms).
  const env = open({ path, maxDbs: 64, mapSize: 64 * 1024 ** 3, encoding: 'msgpack', overlappingSync: false });
  // msgpack with record structures shared in each database (lmdb-js `sharedStructuresKey`):
  // decoding an app record takes 1.9 µs instead of 5.1 µs with self-describing records
  // (measured here), and records written without them still read. Every request reads several
  // records (token, authorization, app, tag or blob), so this is on every hot path.
  const db = <V>(name: string) => env.openDB<V, string>(name, { encoding: 'msgpack', sharedStructuresKey: Symbol.for('structures') });
  const metadata = new LmdbMetadataStore(env);
  const store: Store = {
    metadata,
    env,
    meta: db('meta'),
    accounts: db('accounts'),
    accountsByEmail: db('accounts-by-email'),
    authorizations: db('authorizations'),
    tokens: db('tokens'),
    authorizationsByAccount: db('authorizations-by-account'),
    authorizationsByClient: db('authorizations-by-client'),
    authorizationsByTeam: db('authorizations-by-team'),
    clients: db('clients'),
    clientsByOwner: db('clients-by-owner'),
    webSessions: db('web-sessions'),
    signIns: db('sign-ins'),
    apps: db('apps'),
    appsByName: db('apps-by-name'),
    repositories: db('repositories'),
    repositoryBlobs: db('repository-blobs'),
    blobRepositories: db('blob-repositories'),
    repositoryManifests: db('repository-manifests'),
    tags: db('tags'),
    manifestTags: db('manifest-tags'),
    manifests: db('manifests'),
    images: db('images'),
    blobs: db('blobs'),
    uploads: db('uploads'),
    releases: db('releases'),
    formations: db('formations'),
    configVars: db('config-vars'),
    authorizationUse: db('authorization-use'),
    teams: db('teams'),
    teamsByName: db('teams-by-name'),
    memberships: db('memberships'),
    membershipsByAccount: db('memberships-by-account'),
    close: () => env.close(),
  };
  await migrate(metadata);
  return store;
}
