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
 * `maxAttempts` — callers never retry. The attempt (postgres-attempt.ts) remembers what it read,
 * so a body that reads its keys with one `getMany` and then `get`s them one by one costs one
 * round trip. Writes are buffered during `body` and applied at its end in one statement (upsert,
 * delete, and the cache notice of postgres-invalidation.ts), then COMMIT; a read inside `body`
 * sees the buffered writes (pending-writes.ts). So a transaction costs BEGIN, its reads, one
 * write statement and COMMIT. `body` does only store operations, so a database transaction is
 * never open while Slipway waits on an HTTP client; `idle_in_transaction_session_timeout` ends
 * one that a crashed caller left open.
 *
 * Reads outside a transaction are single statements on a pooled connection (postgres-reads.ts:
 * one round trip, the latest committed state: READ COMMITTED is enough for one statement) — or, for the keyspaces
 * the hot paths read, answers from a node-local cache invalidated through LISTEN/NOTIFY
 * (engine/storage/read-cache.ts, engine/storage/postgres-invalidation.ts: what is cached, how
 * every write invalidates it on every node, and the worst-case staleness). The cache's misses
 * that arrive while others are on their way to the database share one statement
 * (statement-batch.ts, `readStatementsInFlight`): many concurrent first pulls cost the database
 * a statement per round trip, not one each.
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
  checkKey, TransactionConflictError,
  type Entry, type ExclusiveOptions, type ExclusiveOutcome, type Keyspace, type MetadataStore, type MetadataTransaction,
  type RangeOptions, type ReadCacheProbe, type RecordRef, type RecordValues, type StringField, type TransactOptions, type WithNamed,
} from './metadata.js';
import { Attempt } from './postgres-attempt.js';
import { ContentionGate } from './contention-gate.js';
import { isRetryable, translate } from './postgres-errors.js';
import { runExclusive, type LockConnection } from './postgres-exclusive.js';
import { Invalidation, type Notice } from './postgres-invalidation.js';
import { cachedGet, cachedGetMany, cachedGetWithNamed, CoalescedReads, getOn, rangeOn } from './postgres-reads.js';
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
  /**
   * Statements carrying the read cache's misses at once, per kind of read (statement-batch.ts;
   * default 1): reads that arrive while that many are on their way share the next one.
   */
  readStatementsInFlight?: number;
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

/** The PostgreSQL implementation of the metadata contract. */
export class PostgresMetadataStore implements MetadataStore {
  readonly kind = 'postgres';
  readonly pool: pg.Pool;
  readonly #lock: LockConnection;
  /** Cache invalidation: always sends notices; listens and caches unless `readCache: false`. */
  readonly #inv: Invalidation;
  /** Queues transactions that conflicted (contention-gate.ts). */
  readonly #gate = new ContentionGate();
  readonly #caching: boolean;
  /** The read cache's misses, coalesced into shared statements (postgres-reads.ts). */
  readonly #reads: CoalescedReads;

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
    this.#reads = new CoalescedReads(this.pool, { maxInFlight: opts.readStatementsInFlight });
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

  /** The read cache for metrics (metadata.ts `ReadCacheProbe`); undefined when it is turned off. */
  get readCache(): ReadCacheProbe | undefined {
    if (!this.#caching) return undefined;
    const inv = this.#inv, reads = this.#reads;
    return {
      get usable() { return inv.usable; },
      get cache() { return inv.cache; },
      get onSync() { return inv.onSync; },
      set onSync(f) { inv.onSync = f; },
      get barrierRoundTrips() { return inv.roundTrips; },
      get missReads() { return reads.stats; },
    };
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
      // A cached keyspace: the cache, once the read barrier confirmed it if it holds the record
      // (#needsBarrier), filled on a miss.
      if (ReadCache.caches(ks.name) && inv.usable) {
        checkKey(ks, k);
        if (!this.#needsBarrier(inv, [[ks, k]]) || (await this.#fresh(inv))) return await cachedGet(this.#reads, inv.cache, ks, k);
      }
      return await getOn(this.pool, ks, k);
    } catch (e) {
      throw translate(e);
    }
  }

  /**
   * Cached keyspaces' records from the cache when it is usable and fresh (one barrier for the
   * call), every other key in one statement.
   */
  async getMany<const R extends ReadonlyArray<RecordRef<unknown>>>(refs: R): Promise<RecordValues<R>> {
    const inv = this.#inv;
    try {
      for (const [ks, k] of refs) checkKey(ks, k);
      const cached = inv.usable && refs.some(([ks]) => ReadCache.caches(ks.name)) && (!this.#needsBarrier(inv, refs) || (await this.#fresh(inv)));
      return (await cachedGetMany(this.pool, cached ? inv.cache : null, refs)) as RecordValues<R>;
    } catch (e) {
      throw translate(e);
    }
  }

  /**
   * The record and the record it names in one statement (postgres-reads.ts `cachedGetWithNamed`),
   * through the cache when `ks` is cached and the cache usable and fresh (the read barrier, as
   * for `get`).
   */
  async getWithNamed<V, W>(ks: Keyspace<V>, k: string, field: StringField<V>, next: Keyspace<W>): Promise<WithNamed<V, W>> {
    const inv = this.#inv;
    try {
      checkKey(ks, k);
      const cached = ReadCache.caches(ks.name) && inv.usable && (!this.#needsBarrier(inv, [[ks, k]]) || (await this.#fresh(inv)));
      return await cachedGetWithNamed(this.#reads, cached ? inv.cache : null, ks, k, field, next);
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

  /**
   * Whether a read of `refs` through the cache must wait for the read barrier (`#fresh`): only
   * when the cache holds an entry (a value or an absence) for one of its cached records. Rule: the
   * barrier exists so that no entry older than a commit acknowledged before the request is
   * served; a read that finds no entry serves none, and its statement, sent after the request
   * began, sees every such commit. Its answer fills the cache under the fill-race rule as any
   * miss's does (read-cache.ts): a fill is refused when an invalidation of its key arrived after
   * the read began, so an older answer never replaces what a notification still on its way will
   * evict. When this answers false, the caller must read the cache in the same synchronous run
   * (no `await` in between): an entry filled meanwhile would be served unconfirmed. This takes
   * the barrier off the path of first reads; a request whose other reads hit the cache (the
   * credentials' check) waits for it there, as before.
   */
  #needsBarrier(inv: Invalidation, refs: ReadonlyArray<RecordRef<unknown>>): boolean {
    return refs.some(([ks, k]) => ReadCache.caches(ks.name) && inv.cache.holds(ks.name, k));
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

  /**
   * Runs `body` until it commits (see the top of this file); returns its result and its cache
   * notice. The first attempt runs beside any others; once it has conflicted, the later attempts
   * queue on the contention gate (engine/storage/contention-gate.ts) with a connection of their
   * own, taken only when their turn comes, so queued transactions hold no pooled connection.
   * @throws TransactionConflictError after `maxAttempts` (default 16) conflicting attempts.
   */
  async #attempts<T>(body: (tx: MetadataTransaction) => Promise<T> | T, opts: TransactOptions): Promise<{ result: T; notice: Notice | null }> {
    const maxAttempts = opts.maxAttempts ?? 16;
    const clear = this.#gate.whenClear();
    if (clear) await clear;
    const first = await this.#onConnection((client) => this.#attempt(client, body));
    if (first) return first;
    return this.#gate.serially(() => this.#onConnection(async (client) => {
      for (let attempt = 2; attempt <= maxAttempts; attempt++) {
        // Back off with full jitter, doubling up to 100 ms (4, 8, 16, … ms), so transactions of
        // other nodes (which this node's gate does not queue) that keep colliding separate.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 2 ** attempt)));
        const next = await this.#attempt(client, body);
        if (next) return next;
      }
      throw new TransactionConflictError(maxAttempts);
    }));
  }

  /** Runs `fn` on a pooled connection, released afterwards (discarded when `fn` broke it). */
  async #onConnection<R>(fn: (client: pg.PoolClient) => Promise<R>): Promise<R> {
    const { client, done } = await this.#checkout();
    let broken: unknown;
    try {
      return await fn(client);
    } catch (e) {
      if (e instanceof BrokenConnection) {
        broken = e.rollbackError;
        throw e.cause;
      }
      throw e;
    } finally {
      done(broken);
    }
  }

  /**
   * One attempt: BEGIN SERIALIZABLE, `body`, the writes, COMMIT. Undefined when it lost a
   * serialization conflict (rolled back; worth another attempt).
   * @throws the translated error otherwise; BrokenConnection when even the rollback failed.
   */
  async #attempt<T>(client: pg.PoolClient, body: (tx: MetadataTransaction) => Promise<T> | T): Promise<{ result: T; notice: Notice | null } | undefined> {
    const tx = new Attempt(client);
    try {
      await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
      const result = await body(tx);
      const notice = await tx.apply(this.#inv);
      await client.query('COMMIT');
      return { result, notice };
    } catch (e) {
      let rollbackError: unknown;
      await client.query('ROLLBACK').catch((err) => { rollbackError = err ?? new Error('ROLLBACK failed'); });
      if (rollbackError) throw new BrokenConnection(translate(e), rollbackError);
      if (isRetryable(e)) return undefined;
      throw translate(e);
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

/** A transaction's error after which its connection could not even roll back: it is discarded. */
class BrokenConnection extends Error {
  constructor(readonly cause: unknown, readonly rollbackError: unknown) {
    super('connection broken during a transaction');
  }
}
