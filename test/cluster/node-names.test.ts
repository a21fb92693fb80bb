/**
 * One running node per node name on one database (engine/blobs/node-claim.ts): a second node
 * started with a name a running node has is refused, naming SLIPWAY_NODE_NAME, and changes
 * nothing (the first node keeps serving); once the first stops, the name is free. A node killed
 * with SIGKILL frees its name with its database session, so it starts again at once under the
 * same name. Real PostgreSQL; in-process nodes for the refusal, spawned ones for the kill.
 */
import t from 'tap';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { startInProcess, startSpawned } from '../helpers/harness.js';
import { http } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';

const skip = postgresSkip();

t.test('a node name is held by one running node', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const shared = tempDir();
  t.teardown(() => shared.cleanup());
  const metadata = () => PostgresMetadataStore.open({ connectionString: db.connectionString });
  const start = (name: string) => startInProcess({ dataDir: shared.dir, metadata, env: { SLIPWAY_NODE_NAME: name } });

  const a = await start('web-1');
  t.teardown(() => a.stop());
  await t.rejects(start('web-1'), /another running node uses the node name "web-1".*SLIPWAY_NODE_NAME/, 'a second node named web-1 is refused');
  t.equal((await http('GET', `${a.urls.admin}/readyz`)).status, 200, 'the first node still serves');
  const b = await start('web-2');
  t.teardown(() => b.stop());
  t.pass('another name starts beside it');
  await a.stop();
  const again = await start('web-1');
  t.teardown(() => again.stop());
  t.pass('after the first stopped, its name is free');
});

t.test('a node killed with SIGKILL gets its name back at once', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const shared = tempDir();
  t.teardown(() => shared.cleanup());
  const opts = { dataDir: shared.dir, databaseUrl: db.connectionString, env: { SLIPWAY_NODE_NAME: 'crashy' }, startTimeoutMs: 120_000 };
  const first = await startSpawned(opts);
  t.teardown(() => first.stop());
  await first.kill();
  const second = await startSpawned(opts);
  t.teardown(() => second.stop());
  t.equal((await http('GET', `${second.urls.admin}/readyz`)).status, 200, 'restarted under the same name');
});
