/**
 * The metadata contract (engine/storage/metadata.ts) on PostgreSQL, for clusters: any number of
 * Slipway nodes share one database.
 *
 * ## Layout
 * One table, `slipway_kv (keyspace text, key text COLLATE "C", value jsonb)`, primary key
 * `(keyspace, key)`: the C collation orders keys by their UTF-8 bytes, as LMDB does, so ranges
 * return the same entries in the same order on both backends. `slipway_schema` holds the schema
 * version; `migrate()` runs the versioned SQL migrations below at start, under a transaction-level
 * advisory lock so that nodes starting together do not race (the second waits, then finds the
 * schema current).
 *
 * ## Isolation
 * `transact` runs `body` inside `BEGIN ISOLATION LEVEL SERIALIZABLE`: PostgreSQL's serializable
 * snapshot isolation tracks what every transaction read (rows, and index ranges through predicate
 * locks, so phantoms are covered) and aborts one of two transactions whose reads and writes
 * cannot be ordered (SQLSTATE 40001). Such aborts, and deadlocks (40P01), are retried here, up to
 * `maxAttempts` — callers never retry. Writes are buffered during `body` and applied at its end in
 * one statement (upsert, delete, and the cache notice of postgres-invalidation.ts), then COMMIT; a read inside `body` sees the
 * buffered writes (pending-writes.ts). `body` does only store operations, so a database
 * transaction is never open while Slipway waits on an HTTP client; `idle_in_transaction_session_
 * timeout` ends one that a crashed caller left open.
 *
 * Reads outside a transaction are single statements on a pooled connection (one round trip, the
 * latest committed state: READ COMMITTED is enough for one statement) — or, for the keyspaces
 * the hot paths read, answers from a node-local cache invalidated through LISTEN/NOTIFY
 * (engine/storage/read-cache.ts, engine/storage/postgres-invalidation.ts: what is cached, how
 * every write invalidates it on every node, and the worst-case staleness).
 *
 * ## Failure
 * A connection error, an administrator shutdown or a statement timeout becomes
 * `StoreUnavailableError` (503 at the hosts); the pool replaces broken connections by itself, so
 * the node recovers when the database returns. Every statement has a timeout
 * (`statementTimeoutMs`), and getting a connection from the pool too (`connectTimeoutMs`): a
 * request never hangs on the database.
 */
import pg from 'pg';
import {
  checkKey, resolveRange, TransactionConflictError,
  type Entry, type ExclusiveOptions, type ExclusiveOutcome, type Keyspace, type MetadataStore, type MetadataTransaction,
  type RangeOptions, type TransactOptions,
} from './metadata.js';
import { BufferedWrites, REMOVED } from './pending-writes.js';
import { isRetryable, translate } from './postgres-errors.js';
import { runExclusive, type LockConnection } from './postgres-exclusive.js';
import { CHANNEL, Invalidation, type Notice } from './postgres-invalidation.js';
import { ReadCache, type ReadCacheLimits } from './read-cache.js';
import { currentReadScope, enableReadScopes } from './read-scope.js';

/** Settings of the PostgreSQL metadata store. */
export interface PostgresMetadataOptions {
  /** `postgres://user:password@host:port/database` (libpq URL). */
  connectionString: string;
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** Longest a statement may run, ms (default 5000). */
  statementTimeoutMs?: number;
  /** Longest to wait for a connection, ms (default 5000). */
  connectTimeoutMs?: number;
  /**
   * The node-local read cache for `get` outside transactions (engine/storage/read-cache.ts):
   * false turns it off (every read a round trip; the node still notifies other nodes of its
   * writes); an object sets its limits. Default on.
   */
  readCache?: boolean | ReadCacheLimits;
  /** Heartbeat interval of the cache's listener, ms (postgres-invalidation.ts; default 1000). */
  listenerHeartbeatMs?: number;
  /** Longest a round trip through the listener may take before it counts as lost, ms (default 1000). */
  listenerTimeoutMs?: number;
}

/** Ordered schema migrations; index + 1 is the version each brings. Never edit a shipped one. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE slipway_kv (
     keyspace text NOT NULL,
     key text COLLATE "C" NOT NULL,
     value jsonb NOT NULL,
     PRIMARY KEY (keyspace, key)
   )`,
];

/** Advisory lock id taken while migrating ("slipway" as hex digits, one bigint). */
const MIGRATION_LOCK = 0x736c6970776179;

/** A SELECT over one keyspace's range, with its parameters. */
function rangeQuery(ks: Keyspace<unknown>, opts: RangeOptions | undefined): { text: string; values: unknown[] } | null {
  const r = resolveRange(opts);
  if (r.empty) return null;
  const values: unknown[] = [ks.name];
  let text = 'SELECT key, value FROM slipway_kv WHERE keyspace = $1';
  if (r.start !== undefined) { values.push(r.start); text += ` AND key >= $${values.length}`; }
  if (r.end !== undefined) { values.push(r.end); text += ` AND key < $${values.length}`; }
  text += r.reverse ? ' ORDER BY key DESC' : ' ORDER BY key';
  if (r.limit !== undefined) { values.push(r.limit); text += ` LIMIT $${values.length}`; }
  return { text, values };
}

type Queryable = Pick<pg.PoolClient, 'query'>;

async function getOn<V>(db: Queryable, ks: Keyspace<V>, k: string): Promise<V | undefined> {
  checkKey(ks, k);
  const res = await db.query({ name: 'slipway-get', text: 'SELECT value FROM slipway_kv WHERE keyspace = $1 AND key = $2', values: [ks.name, k] });
  return res.rows.length === 0 ? undefined : (res.rows[0].value as V);
}

/** `get` for a cached keyspace: the record's JSON text (null when absent) — what the cache keeps. */
async function getTextOn(db: Queryable, ks: Keyspace<unknown>, k: string): Promise<string | null> {
  const res = await db.query({ name: 'slipway-get-text', text: 'SELECT value::text AS v FROM slipway_kv WHERE keyspace = $1 AND key = $2', values: [ks.name, k] });
  return res.rows.length === 0 ? null : (res.rows[0].v as string);
}

/** `get` through the cache: a hit, or a read whose answer fills the cache (unless invalidated meanwhile). */
async function cachedGet<V>(db: Queryable, cache: ReadCache, ks: Keyspace<V>, k: string): Promise<V | undefined> {
  const hit = cache.lookup<V>(ks.name, k);
  if (hit) return hit.value;
  const ticket = cache.beginFill(ks.name, k);
  let text: string | null;
  try {
    text = await getTextOn(db, ks, k);
  } catch (e) {
    cache.abandon();
    throw e;
  }
  cache.fill(ticket, text);
  return text === null ? undefined : (JSON.parse(text) as V);
}

async function rangeOn<V>(db: Queryable, ks: Keyspace<V>, opts: RangeOptions | undefined): Promise<Array<Entry<V>>> {
  const q = rangeQuery(ks, opts);
  if (!q) return [];
  const res = await db.query(q);
  return res.rows.map((row: { key: string; value: V }) => ({ key: row.key, value: row.value }));
}

/** One attempt of a transaction body on a connection inside BEGIN … COMMIT. */
class Attempt extends BufferedWrites implements MetadataTransaction {
  constructor(readonly client: pg.PoolClient) {
    super();
  }

  async get<V>(ks: Keyspace<V>, k: string): Promise<V | undefined> {
    checkKey(ks, k);
    const pending = this.writes.lookup(ks, k);
    if (pending) return pending.value;
    return getOn(this.client, ks, k);
  }

  async range<V>(ks: Keyspace<V>, opts?: RangeOptions): Promise<Array<Entry<V>>> {
    const committed = await rangeOn(this.client, ks, this.writes.rangeLimitFor(ks, opts));
    return this.writes.overlay(ks, committed, opts);
  }

  /**
   * Applies the buffered writes in one statement: the upsert, the delete, and the cache
   * invalidation notice (engine/storage/postgres-invalidation.ts) when the transaction wrote a
   * cached keyspace. Returns that notice, or null.
   */
  async apply(inv: Invalidation): Promise<Notice | null> {
    const put: [string[], string[], string[]] = [[], [], []];
    const del: [string[], string[]] = [[], []];
    const written: Array<readonly [string, string]> = [];
    for (const { ks, entries } of this.writes.byKeyspace.values()) {
      for (const [k, v] of entries) {
        written.push([ks.name, k]);
        if (v === REMOVED) { del[0].push(ks.name); del[1].push(k); }
        else { put[0].push(ks.name); put[1].push(k); put[2].push(JSON.stringify(v)); }
      }
    }
    if (written.length === 0) return null;
    const notice = inv.noticeFor(written);
    await this.client.query(applyStatement(put, del, notice));
    return notice;
  }
}

/**
 * The writes of one transaction as one statement: the upsert, the delete and the notification,
 * each only when there is one (data-modifying CTEs run whether or not the outer query reads them;
 * a key is never both put and deleted by one transaction). A part is left out rather than run
 * empty: under SERIALIZABLE, a delete planned as a scan of the table would take a predicate lock
 * on all of it and make every concurrent writer conflict.
 */
function applyStatement(put: [string[], string[], string[]], del: [string[], string[]], notice: Notice | null): { name: string; text: string; values: unknown[] } {
  const ctes: string[] = [];
  const values: unknown[] = [];
  let name = 'slipway-apply-';
  if (put[0].length > 0) {
    values.push(...put);
    ctes.push(`put AS (INSERT INTO slipway_kv (keyspace, key, value)
      SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])
      ON CONFLICT (keyspace, key) DO UPDATE SET value = excluded.value)`);
    name += 'p';
  }
  if (del[0].length > 0) {
    const n = values.length;
    values.push(...del);
    ctes.push(`del AS (DELETE FROM slipway_kv WHERE (keyspace, key) IN (SELECT * FROM unnest($${n + 1}::text[], $${n + 2}::text[])))`);
    name += 'd';
  }
  let tail = 'SELECT 1';
  if (notice) {
    values.push(CHANNEL, notice.payload);
    tail = `SELECT pg_notify($${values.length - 1}, $${values.length})`;
    name += 'n';
  }
  return { name, text: `WITH ${ctes.join(', ')} ${tail}`, values };
}

/** The PostgreSQL implementation of the metadata contract. */
export class PostgresMetadataStore implements MetadataStore {
  readonly kind = 'postgres';
  readonly pool: pg.Pool;
  readonly #lock: LockConnection;
  /** Cache invalidation: always sends notices; listens and caches unless `readCache: false`. */
  readonly #inv: Invalidation;
  readonly #caching: boolean;

  private constructor(opts: PostgresMetadataOptions) {
    const statementTimeout = opts.statementTimeoutMs ?? 5000;
    this.#lock = {
      connectionString: opts.connectionString, connectTimeoutMs: opts.connectTimeoutMs ?? 5000, statementTimeoutMs: statementTimeout,
      heartbeatMs: Math.max(1000, statementTimeout), pollMs: 200,
    };
    this.pool = new pg.Pool({
      connectionString: opts.connectionString,
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
      statement_timeout: statementTimeout,
      query_timeout: statementTimeout + 1000,
      idle_in_transaction_session_timeout: statementTimeout * 2,
      application_name: 'slipway',
    });
    // An idle connection that breaks (database restarted) is dropped by the pool; without this
    // listener its error would be an uncaught exception.
    this.pool.on('error', () => {});
    this.#caching = opts.readCache !== false;
    this.#inv = new Invalidation(
      { connectionString: opts.connectionString, connectTimeoutMs: opts.connectTimeoutMs ?? 5000, heartbeatMs: opts.listenerHeartbeatMs, heartbeatTimeoutMs: opts.listenerTimeoutMs },
      new ReadCache(typeof opts.readCache === 'object' ? opts.readCache : {}),
    );
  }

  /** The read cache's listener (tests and diagnostics: `usable`, `listenerPid`, `cache.stats`). */
  get invalidation(): Invalidation {
    return this.#inv;
  }

  /**
   * Connects, runs the schema migrations and returns the store.
   * @throws StoreUnavailableError when the database cannot be reached; Error when its schema is
   *         newer than this build.
   */
  static async open(opts: PostgresMetadataOptions): Promise<PostgresMetadataStore> {
    const store = new PostgresMetadataStore(opts);
    try {
      await store.migrate();
      if (store.#caching) {
        enableReadScopes();
        await store.#inv.start();
      }
    } catch (e) {
      await store.pool.end().catch(() => {});
      throw translate(e);
    }
    return store;
  }

  /** Brings the schema to the newest version, one migration at a time, under an advisory lock. */
  async migrate(): Promise<void> {
    const { client, done } = await this.#checkout();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await client.query('CREATE TABLE IF NOT EXISTS slipway_schema (version integer NOT NULL)');
      const res = await client.query('SELECT version FROM slipway_schema');
      const current: number = res.rows[0]?.version ?? 0;
      if (current > MIGRATIONS.length) {
        throw new Error(`metadata database has schema version ${current}, newer than this build (${MIGRATIONS.length}); upgrade Slipway`);
      }
      for (let v = current; v < MIGRATIONS.length; v++) await client.query(MIGRATIONS[v]!);
      if (res.rows.length === 0) await client.query('INSERT INTO slipway_schema (version) VALUES ($1)', [MIGRATIONS.length]);
      else await client.query('UPDATE slipway_schema SET version = $1', [MIGRATIONS.length]);
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {});
      throw e;
    } finally {
      done();
    }
  }

  /**
   * A pooled connection for several statements. pg-pool stops listening for a connection's
   * errors while it is checked out, so a database that goes away between two statements (a
   * crash, a restart) would make the client emit an unhandled 'error' and end the process: the
   * listener here keeps it, the next statement fails (StoreUnavailableError), and `done()`
   * returns a broken connection to be destroyed rather than reused.
   * @throws StoreUnavailableError when no connection can be had within the connect timeout.
   */
  async #checkout(): Promise<{ client: pg.PoolClient; done(broken?: unknown): void }> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw translate(e);
    }
    let lost: Error | undefined;
    const onError = (e: Error) => { lost = e; };
    client.on('error', onError);
    return {
      client,
      done(broken?: unknown) {
        client.removeListener('error', onError);
        const err = lost ?? (broken instanceof Error ? broken : undefined);
        client.release(err);
      },
    };
  }

  async get<V>(ks: Keyspace<V>, k: string): Promise<V | undefined> {
    const inv = this.#inv;
    try {
      // A cached keyspace, and the cache confirmed fresh by the read barrier: the cache.
      if (ReadCache.caches(ks.name) && inv.usable && (checkKey(ks, k), await this.#fresh(inv))) return await cachedGet(this.pool, inv.cache, ks, k);
      return await getOn(this.pool, ks, k);
    } catch (e) {
      throw translate(e);
    }
  }

  /** The read barrier of this get: the request's (engine/storage/read-scope.ts), or one of its own. */
  #fresh(inv: Invalidation): Promise<boolean> {
    const scope = currentReadScope();
    if (!scope) return inv.sync();
    return (scope.fresh ??= inv.sync());
  }

  async range<V>(ks: Keyspace<V>, opts?: RangeOptions): Promise<Array<Entry<V>>> {
    try {
      return await rangeOn(this.pool, ks, opts);
    } catch (e) {
      throw translate(e);
    }
  }

  async transact<T>(body: (tx: MetadataTransaction) => Promise<T> | T, opts: TransactOptions = {}): Promise<T> {
    const { result, notice } = await this.#attempts(body, opts);
    if (notice) this.#inv.committed(notice);
    return result;
  }

  /** Runs `body` until it commits (see the top of this file); returns its result and its cache notice. */
  async #attempts<T>(body: (tx: MetadataTransaction) => Promise<T> | T, opts: TransactOptions): Promise<{ result: T; notice: Notice | null }> {
    const maxAttempts = opts.maxAttempts ?? 16;
    const { client, done } = await this.#checkout();
    let broken: unknown;
    try {
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        const tx = new Attempt(client);
        try {
          await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
          const result = await body(tx);
          const notice = await tx.apply(this.#inv);
          await client.query('COMMIT');
          return { result, notice };
        } catch (e) {
          await client.query('ROLLBACK').catch((rollbackError) => { broken = rollbackError; });
          if (broken) throw translate(e);
          if (isRetryable(e)) {
            // Back off with full jitter, doubling up to 100 ms (4, 8, 16, … ms), so transactions
            // that keep colliding separate. A linear 2 ms step was too short: eight concurrent
            // manifest PUTs on images sharing base layers (each raises those blobs' refs) lost
            // 16 times in a row on a loaded machine (test/cluster/gc-under-pushes.test.ts).
            await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 2 ** (attempt + 1))));
            continue;
          }
          throw translate(e);
        }
      }
      throw new TransactionConflictError(maxAttempts);
    } finally {
      done(broken);
    }
  }

  /** Names of the keyspaces holding at least one record, in name order (whole-store tools: `slipway migrate`). */
  async keyspaceNames(): Promise<string[]> {
    try {
      return (await this.pool.query('SELECT keyspace FROM slipway_kv GROUP BY keyspace ORDER BY keyspace COLLATE "C"')).rows.map((r: { keyspace: string }) => r.keyspace);
    } catch (e) {
      throw translate(e);
    }
  }

  /** A session-level advisory lock on a connection of its own (engine/storage/postgres-exclusive.ts). */
  exclusive<T>(name: string, fn: (signal: AbortSignal) => Promise<T>, opts?: ExclusiveOptions): Promise<ExclusiveOutcome<T>> {
    return runExclusive(this.#lock, name, fn, opts);
  }

  async close(): Promise<void> {
    await this.#inv.close();
    await this.pool.end();
  }
}
