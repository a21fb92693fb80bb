/**
 * The metadata contract suite against the PostgreSQL implementation, on a real PostgreSQL 15
 * started by the test harness; plus what only a networked store has: concurrent starts migrate
 * once, and an unreachable database is StoreUnavailableError, never a hang.
 */
import t from 'tap';
import pg from 'pg';
import { startPostgres, postgresSkip, type Postgres } from '../helpers/postgres.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { keyspace, StoreUnavailableError } from '../../engine/storage/metadata.js';
import { metadataContractSuite } from '../helpers/metadata-contract-suite.js';

const skip = postgresSkip();

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

  await t.test('an unreachable database is StoreUnavailableError within the timeouts', async (t) => {
    const ks = keyspace<string>('meta', 'unreachable');
    const store = await PostgresMetadataStore.open({ connectionString, connectTimeoutMs: 1000, statementTimeoutMs: 1000 });
    await store.transact((tx) => tx.put(ks, 'k', 'v'));
    await server.stop();
    const started = Date.now();
    await t.rejects(store.get(ks, 'k'), StoreUnavailableError, 'a read');
    await t.rejects(store.transact((tx) => tx.put(ks, 'k', 'w')), StoreUnavailableError, 'a transaction');
    t.ok(Date.now() - started < 10_000, 'refused within the connect and statement timeouts, not hung');
    await store.close();
    await t.rejects(PostgresMetadataStore.open({ connectionString, connectTimeoutMs: 1000 }), StoreUnavailableError, 'a start');
  });
});
