/**
 * Registry notifications in cluster mode (docs/notifications.md "Delivery and its guarantees"):
 * two nodes on one real PostgreSQL with the same endpoint; the node the registry requests reach
 * does not deliver (SLIPWAY_WEBHOOK_DELIVER=off), so the push it records in the shared outbox and
 * the pulls it buffers and flushes there are delivered by the other node, to a node:http receiver
 * that reads distribution's envelope. Each event arrives once, with its fields.
 */
import t from 'tap';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { startInProcess, TEST_EPOCH, waitFor, type InProcessSlipway } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';
import { tempDir } from '../helpers/server.js';
import { NotificationReceiver } from '../helpers/notification-receiver.js';
import { ManualClock } from '../../engine/clock.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';

t.test('a registry event recorded on one node is delivered by another', { skip: postgresSkip() }, async (t) => {
  const pg = await startPostgres();
  const receiver = await NotificationReceiver.start();
  const tmp = tempDir();
  const nodes: InProcessSlipway[] = [];
  t.teardown(async () => {
    for (const n of nodes) await n.stop();
    await receiver.down();
    await pg.stop();
    tmp.cleanup();
  });
  const metadata = () => PostgresMetadataStore.open({ connectionString: pg.connectionString });
  const clock = new ManualClock(TEST_EPOCH);
  const endpoints = JSON.stringify([{ name: 'hooks', url: receiver.url, timeout: '2s', threshold: 2, backoff: '300ms' }]);
  const env = { SLIPWAY_NOTIFICATIONS_ENDPOINTS: endpoints, SLIPWAY_WEBHOOK_POLL_INTERVAL: '0.1', SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64') };
  const a = await startInProcess({ metadata, clock, env: { ...env, SLIPWAY_WEBHOOK_DELIVER: 'off' } });
  nodes.push(a);
  nodes.push(await startInProcess({ metadata, clock, env }));
  const key = a.operator.apiKey;
  t.equal((await createApp(a.api, key, 'clustered')).status, 201);
  const img = await buildImage(join(tmp.dir, 'img'), sampleSpec());
  const target = { registry: a.urls.registry, auth: basic('_', key) };
  await pushBuiltImage(target, 'clustered/web', 'v1', img);

  const push = await waitFor('the push event, from the delivering node', () => receiver.events().find((e) => e.action === 'push' && e.target.repository === 'clustered/web'), { timeoutMs: 30_000 });
  t.match(push.target, { digest: img.manifestDigest, tag: 'v1', repository: 'clustered/web' });
  t.match(push.request, { method: 'PUT', host: new URL(a.urls.registry).host }, 'the request is the one node A answered');

  const pulled = await http('GET', `${a.urls.registry}/v2/clustered/web/manifests/v1`, { headers: { ...target.auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
  t.equal(pulled.status, 200);
  const pull = await waitFor('the pull event, buffered on A, delivered by B', () => receiver.events().find((e) => e.action === 'pull' && e.target.repository === 'clustered/web'), { timeoutMs: 30_000 });
  t.match(pull.target, { digest: img.manifestDigest, repository: 'clustered/web' });
  t.same(receiver.received.flatMap((r) => r.problems), [], 'every envelope reads as distribution\'s');
  const ids = receiver.events().map((e) => e.id);
  t.equal(new Set(ids).size, ids.length, 'each event once');
});
