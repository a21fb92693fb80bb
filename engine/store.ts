/**
 * Opens the metadata store behind the metadata contract (engine/storage/metadata.ts) and runs
 * the schema migrations of the domains (engine/migrations.ts):
 * - embedded (default): one LMDB environment in `<data>/lmdb` (engine/storage/lmdb-metadata.ts);
 *   each keyspace is an LMDB named database of the same name (docs/storage.md);
 * - cluster: a PostgreSQL database shared by every node (engine/storage/postgres-metadata.ts),
 *   when `database` is given (SLIPWAY_DATABASE_URL, server/config.ts).
 * The domains reach their records only through `Store.metadata`. This file imports nothing from
 * the domains.
 */
import { open, type RootDatabase } from 'lmdb';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LmdbMetadataStore } from './storage/lmdb-metadata.js';
import type { PostgresMetadataStore } from './storage/postgres-metadata.js';
import { StoreUnavailableError, type MetadataStore } from './storage/metadata.js';
import { migrate } from './migrations.js';
import { DATA_DIR_MODE, secureDataDir } from './data-dir.js';

export { key, KEY_SEPARATOR } from './storage/metadata.js';

/** An open store. */
export interface Store {
  /** The metadata contract over the backend: what every domain uses. */
  metadata: MetadataStore;
  /**
   * The LMDB environment itself, for what only LMDB has: a consistent copy of the whole
   * environment (`slipway backup`, server/ops/backup.ts). No domain reads records through it.
   * Undefined on PostgreSQL.
   */
  env?: RootDatabase;
  close(): Promise<void>;
}

/** Where the metadata lives when it is not the embedded LMDB environment (server/config.ts). */
export interface DatabaseSettings {
  /** `postgres://user:password@host:port/database` (libpq URL; SLIPWAY_DATABASE_URL). */
  url: string;
  /** Connections in this node's pool (SLIPWAY_DATABASE_POOL). */
  poolSize: number;
  /** Longest one statement may run, ms (SLIPWAY_DATABASE_STATEMENT_TIMEOUT). */
  statementTimeoutMs: number;
  /** Longest to wait for a connection, ms (SLIPWAY_DATABASE_CONNECT_TIMEOUT). */
  connectTimeoutMs: number;
  /** The node-local read cache (SLIPWAY_DATABASE_CACHE; engine/storage/read-cache.ts); default on. */
  readCache?: boolean;
  /**
   * Statements at once per kind of read the cache missed (SLIPWAY_DATABASE_READ_STATEMENTS;
   * engine/storage/statement-batch.ts); default 1.
   */
  readStatementsInFlight?: number;
}

/** A database URL with its password replaced by `***`, for messages and logs. */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}
/** The embedded store: always has its LMDB environment. */
export type EmbeddedStore = Store & { env: RootDatabase };

/**
 * Opens (creating if needed) the store and migrates it to the current schema. The data
 * directory's permissions are made owner-only first (engine/data-dir.ts); with `database` it
 * still holds the node's keys, blobs and upload sessions, but no metadata.
 * @param dir the data directory; the LMDB environment lives in `dir/lmdb`.
 * @param database open PostgreSQL instead of LMDB.
 * @throws StoreUnavailableError naming the (redacted) URL when the database cannot be reached
 *         within `connectTimeoutMs`; Error when the store was written by a newer build
 *         (engine/migrations.ts).
 */
export async function openStore(dir: string, database?: DatabaseSettings): Promise<Store> {
  secureDataDir(dir);
  if (database) return openPostgres(database);
  const path = join(dir, 'lmdb');
  mkdirSync(path, { recursive: true, mode: DATA_DIR_MODE });
  // overlappingSync off: a write's promise then resolves only once its commit is on disk, so
  // nothing is acknowledged (a pushed manifest, a revocation) that a power loss could undo. With
  // lmdb-js's Linux default (on) it resolves at commit and the sync follows later. Measured
  // cost here: a few tenths of a millisecond on a manifest PUT (fdatasync p50 0.08 ms).
  // Records are msgpack with structures shared per database (lmdb-metadata.ts): decoding an app
  // record takes 1.9 µs instead of 5.1 µs with self-describing records (measured here).
  const env = open({ path, maxDbs: 64, mapSize: 64 * 1024 ** 3, encoding: 'msgpack', overlappingSync: false });
  const metadata = new LmdbMetadataStore(env);
  await migrate(metadata);
  return { metadata, env, close: () => metadata.close() };
}

async function openPostgres(db: DatabaseSettings): Promise<Store> {
  // Loaded only here: an embedded node never loads the PostgreSQL driver (about 6 MiB of RSS).
  const { PostgresMetadataStore } = await import('./storage/postgres-metadata.js');
  let metadata: PostgresMetadataStore;
  try {
    metadata = await PostgresMetadataStore.open({
      connectionString: db.url, poolSize: db.poolSize, statementTimeoutMs: db.statementTimeoutMs, connectTimeoutMs: db.connectTimeoutMs, readCache: db.readCache,
      readStatementsInFlight: db.readStatementsInFlight,
    });
  } catch (e) {
    if (e instanceof StoreUnavailableError) {
      throw new StoreUnavailableError(`cannot reach the metadata database at ${redactDatabaseUrl(db.url)} (SLIPWAY_DATABASE_URL): ${e.cause instanceof Error ? e.cause.message : e.reason}`, e);
    }
    throw e;
  }
  return storeOver(metadata);
}

/**
 * A store over an already open metadata implementation (PostgreSQL for a cluster node, or any
 * other `MetadataStore`), migrated to the current schema like `openStore` does. `close()` closes
 * `metadata` (so does a failed migration).
 * @throws Error when the store was written by a newer build (engine/migrations.ts).
 */
export async function storeOver(metadata: MetadataStore): Promise<Store> {
  await migrate(metadata).catch(async (e: unknown) => {
    await metadata.close().catch(() => undefined);
    throw e;
  });
  return { metadata, close: () => metadata.close() };
}
