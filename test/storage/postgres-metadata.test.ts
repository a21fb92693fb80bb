/**
 * The metadata contract suite against the PostgreSQL implementation, on a real PostgreSQL 15
 * started by the test harness; plus what only a networked store has: concurrent starts migrate
 * once, and an unreachable database is StoreUnavailableError, never a hang.
 */
import t from 'tap';
import pg from 'pg';
import { startPostgres, postgresSkip, type Postgres } from '../helpers/postgres.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { keyspace } from '../../engine/storage/metadata.js';
import { metadataContractSuite } from '../helpers/metadata-contract-suite.js';

const skip = postgresSkip();
/** How StoreUnavailableError matches (a SlipwayError of code STORE_UNAVAILABLE). */
const unavailable = { name: 'SlipwayError', code: 'STORE_UNAVAILABLE' };

t.test('PostgreSQL metadata store', { skip }, async (t) => {
  const server: Postgres = await startPostgres();
  t.teardown(() => server.stop());
  const connectionString = server.connectionString;

  await t.test('concurrent starts run the migrations once', async (t) => {
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresMetadataStore.open({ connectionString })));
    const c = new pg.Client({ connectionString });
    await c.connect();
    const versions = (await c.query('SELECT version FROM slipway_schema')).rows;
    await c.end();
    t.same(versions, [{ version: 1 }], 'one schema row, current version');
    await Promise.all(stores.map((s) => s.close()));
  });

  await t.test('contract', async (t) => {
    metadataContractSuite(t, {
      open: () => PostgresMetadataStore.open({ connectionString }),
      reopen: async (store) => { await store.close(); return PostgresMetadataStore.open({ connectionString }); },
    });
  });

  await t.test('exclusive across nodes: the lock is freed when its holder\'s session dies, and the holder is told', async (t) => {
    const a = await PostgresMetadataStore.open({ connectionString, statementTimeoutMs: 1000 });
    const b = await PostgresMetadataStore.open({ connectionString });
    t.teardown(async () => { await a.close(); await b.close(); });
    let entered!: () => void;
    const inside = new Promise<void>((r) => { entered = r; });
    const holding = a.exclusive('cross-node', async (signal) => {
      entered();
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      return signal.reason as Error;
    });
    await inside;
    t.same(await b.exclusive('cross-node', async () => 'b'), { ran: false }, 'node B skips while A holds the lock');
    const admin = new pg.Client({ connectionString });
    await admin.connect();
    const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'slipway-lock-cross-node'");
    await admin.end();
    t.equal(killed.rowCount, 1, 'the lock connection was terminated');
    const outcome = await holding;
    t.ok(outcome.ran && outcome.value instanceof Error, 'the holder\'s signal aborted');
    t.same(await b.exclusive('cross-node', async () => 'b'), { ran: true, value: 'b' }, 'node B gets the lock');
  });

  await t.test('a connection killed between two statements of a transaction: 503-error, no crash, the store goes on', async (t) => {
    const ks = keyspace<string>('meta', 'killed-mid-transaction');
    const store = await PostgresMetadataStore.open({ connectionString });
    t.teardown(() => store.close());
    const admin = new pg.Client({ connectionString });
    await admin.connect();
    t.teardown(() => admin.end());
    const idleInTransaction = async () => Number((await admin.query(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'slipway' AND state = 'idle in transaction'")).rows[0].n);
    let attempts = 0;
    const outcome = store.transact(async (tx) => {
      attempts++;
      await tx.get(ks, 'k');
      // The connection sits idle in its transaction: kill it there, and wait until it is gone
      // (pg-pool does not listen for errors of a checked-out connection: an unhandled 'error'
      // event here would end the process).
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'slipway' AND state = 'idle in transaction'");
      while (await idleInTransaction() > 0) await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 50));
      return tx.get(ks, 'k');
    });
    await t.rejects(outcome, unavailable, 'the transaction fails as unavailable');
    t.equal(attempts, 1, 'not retried as a conflict');
    await store.transact((tx) => tx.put(ks, 'k', 'after'));
    t.equal(await store.get(ks, 'k'), 'after', 'the next transaction runs on a new connection');
  });

  await t.test('a restarted database: refused while down, recovered after without reopening', async (t) => {
    const ks = keyspace<string>('meta', 'restart');
    const store = await PostgresMetadataStore.open({ connectionString, connectTimeoutMs: 1000, statementTimeoutMs: 1000 });
    t.teardown(() => store.close());
    await store.transact((tx) => tx.put(ks, 'k', 'before'));
    await server.halt('fast');
    const started = Date.now();
    await t.rejects(store.get(ks, 'k'), unavailable, 'a read while down');
    await t.rejects(store.transact((tx) => tx.put(ks, 'k', 'x')), unavailable, 'a transaction while down');
    t.ok(Date.now() - started < 5_000, `refused in ${Date.now() - started} ms`);
    await server.resume();
    t.equal(await store.get(ks, 'k'), 'before', 'reads work again, on new connections');
    await store.transact((tx) => tx.put(ks, 'k', 'after'));
    t.equal(await store.get(ks, 'k'), 'after', 'and writes');
  });

  await t.test('an unreachable database is StoreUnavailableError within the timeouts', async (t) => {
    const ks = keyspace<string>('meta', 'unreachable');
    const store = await PostgresMetadataStore.open({ connectionString, connectTimeoutMs: 1000, statementTimeoutMs: 1000 });
    await store.transact((tx) => tx.put(ks, 'k', 'v'));
    await server.stop();
    const started = Date.now();
    await t.rejects(store.get(ks, 'k'), unavailable, 'a read');
    await t.rejects(store.transact((tx) => tx.put(ks, 'k', 'w')), unavailable, 'a transaction');
    t.ok(Date.now() - started < 10_000, 'refused within the connect and statement timeouts, not hung');
    await store.close();
    await t.rejects(PostgresMetadataStore.open({ connectionString, connectTimeoutMs: 1000 }), unavailable, 'a start');
  });
});
