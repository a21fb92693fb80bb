/**
 * Schema migrations of the metadata store: brings a store written by an older build to
 * SCHEMA_VERSION in one transaction of the metadata contract (every step and the new version
 * commit together, or nothing does), or stamps a new store. Each domain owns its steps
 * (engine/<domain>/migrations.ts); this module only orders them. engine/store.ts opens the
 * store and imports nothing from the domains.
 */
import { runWhenExclusive, type MetadataReader, type MetadataStore } from './storage/metadata.js';
import { meta } from './storage/meta-keyspace.js';
import { indexAllAuthorizations, type AuthorizationIndex } from './identity/migrations.js';
import { indexBlobLinks, indexManifestTags, manifestBytesAsText } from './registry/migrations.js';
import { markLegacyBlobsForVerification } from './blobs/migrations.js';
import { resetBlobTotalsInTransaction } from './blobs/refs.js';
import { resetManifestTotalsInTransaction } from './registry/registry.js';
import { moveAuthorizationCodes } from './oauth/migrations.js';

/**
 * Current schema version; bump with an ordered step in `migrate()`.
 * 1: accounts, authorizations, tokens, registry. 2: authorizations indexed by account and client.
 * 3: authorizations indexed by team; repository blob links indexed by digest.
 * 4: tags indexed by manifest (`manifest-tags`).
 * 5: records of every keyspace may use shared msgpack structures (no data change: older records
 *    still read; the bump makes older builds refuse the directory instead of misreading it).
 * 6: blob records may be quarantined (`BlobRecord.quarantined`); blobs written by older builds
 *    are verified once at start-up (meta `blobs-to-verify`, engine/blobs/quarantine.ts).
 * 7: authorization codes move from the `grants` keyspace to `authorization-codes`
 *    (engine/oauth/migrations.ts).
 * 8: manifest records hold their bytes as text (`ManifestRecord.text`) instead of binary, so
 *    every record is JSON-representable (engine/registry/migrations.ts).
 * 9: the blob and manifest records' totals are kept as they change (`blob-totals`,
 *    `manifest-totals`: storage/running-totals.ts); the first totals are counted from the records.
 *    Older builds would change records without them, so they refuse the store.
 */
export const SCHEMA_VERSION = 9;

/**
 * Migrates `metadata` to SCHEMA_VERSION (see the top of this file), holding the store's
 * exclusive lock `schema-migration` (waiting for it when another node holds it).
 * @throws Error when the store was written by a newer build.
 */
export async function migrate(metadata: MetadataStore): Promise<void> {
  // Once across nodes starting together on one database: the others wait, then find it current.
  await runWhenExclusive(metadata, 'schema-migration', () => migrateNow(metadata));
}

async function migrateNow(metadata: MetadataStore): Promise<void> {
  await metadata.transact(async (tx) => {
    const version = (await tx.get(meta, 'schema')) as number | undefined;
    if (version === undefined) {
      tx.put(meta, 'schema', SCHEMA_VERSION);
      return;
    }
    if (version > SCHEMA_VERSION) {
      throw new Error(`data directory has schema version ${version}, newer than this build (${SCHEMA_VERSION}); upgrade Slipway`);
    }
    if (version === SCHEMA_VERSION) return;
    const indexes: AuthorizationIndex[] = [];
    if (version < 2) indexes.push('account', 'client');
    if (version < 3) indexes.push('team');
    if (indexes.length > 0) await indexAllAuthorizations(tx, indexes);
    if (version < 3) await indexBlobLinks(tx);
    if (version < 4) await indexManifestTags(tx);
    // Older builds could record a blob whose bytes disagree with it: verify them once.
    if (version < 6) markLegacyBlobsForVerification(tx);
    if (version < 7) await moveAuthorizationCodes(tx);
    if (version < 8) await manifestBytesAsText(tx);
    if (version < 9) {
      await resetBlobTotalsInTransaction(tx);
      await resetManifestTotalsInTransaction(tx);
    }
    tx.put(meta, 'schema', SCHEMA_VERSION);
  });
}

/** The schema version recorded in `reader`'s store, or undefined for a store never migrated (readiness, backup). */
export async function schemaVersion(reader: MetadataReader): Promise<number | undefined> {
  return (await reader.get(meta, 'schema')) as number | undefined;
}
