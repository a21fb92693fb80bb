/**
 * Retention of the delivery log (docs/webhooks.md "Guarantees and bounds";
 * engine/webhooks/retention.ts), through the Platform API on an in-process server whose engine
 * clock the test moves, on LMDB and on PostgreSQL: with SLIPWAY_WEBHOOK_RETENTION at one hour,
 * an event whose deliveries all ended is gone from the event and delivery logs once it is older
 * than that, while a younger one stays; an event whose `sync` delivery is still being retried
 * (receiver refusing) is kept past the retention until the delivery ends (the retry horizon),
 * then pruned too; a destroyed app's webhooks go with its destroy event. A real receiver on
 * loopback takes the deliveries.
 */
import t, { type Test } from 'tap';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { bearer, createApp, http } from '../helpers/http.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { appWebhooks } from '../../engine/webhooks/keyspaces.js';

const ACCEPT = 'application/vnd.heroku+json; version=3.webhooks';
const HOUR = 3_600_000;
const receiver = await startReceiver();
t.teardown(() => receiver.close());

/** A loopback port nothing listens on (bound, then closed): connections to it are refused. */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

async function scenario(t: Test, databaseUrl: string | undefined): Promise<void> {
  const ts = await startInProcess({
    databaseUrl,
    env: { SLIPWAY_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SLIPWAY_WEBHOOK_POLL_INTERVAL: '0.1', SLIPWAY_WEBHOOK_TIMEOUT: '1', SLIPWAY_WEBHOOK_RETENTION: '3600' },
  });
  t.teardown(() => ts.stop());
  const key = ts.operator.apiKey;
  const api = (method: string, path: string, body?: unknown) =>
    http(method, ts.api + path, { headers: { ...bearer(key), accept: ACCEPT, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const change = async (app: string, vars: Record<string, string>) => {
    const r = await http('PATCH', `${ts.api}/apps/${app}/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify(vars) });
    t.equal(r.status, 200, `${app}: config change`);
  };
  const events = async (app: string) => (await api('GET', `/apps/${app}/webhook-events`)).json as Array<{ id: string; include: string }>;
  const deliveries = async (app: string) => (await api('GET', `/apps/${app}/webhook-deliveries`)).json as Array<{ id: string; status: string; event: { id: string } }>;
  const ended = (app: string, n: number) => waitFor(`${n} ended deliveries of ${app}`, async () => {
    const ds = await deliveries(app);
    return ds.length === n && ds.every((d) => d.status === 'succeeded' || d.status === 'failed') ? ds : undefined;
  });

  for (const app of ['kept', 'stuck']) t.equal((await createApp(ts.api, key, app)).status, 201);
  t.equal((await api('POST', '/apps/kept/webhooks', { include: ['api:release'], level: 'sync', url: receiver.url })).status, 201);
  t.equal((await api('POST', '/apps/stuck/webhooks', { include: ['api:release'], level: 'sync', url: `http://127.0.0.1:${await deadPort()}/hook` })).status, 201);

  await change('kept', { STEP: 'old' });
  await change('stuck', { STEP: 'old' });
  const [old] = await ended('kept', 1);
  const stuckEvent = (await events('stuck')).find((e) => e.include === 'api:release')!;
  await waitFor('the stuck delivery to be scheduled for a retry', async () => (await deliveries('stuck'))[0]?.status === 'scheduled');
  ts.clock.advance(HOUR);
  await change('kept', { STEP: 'young' });
  const both = await ended('kept', 2);
  const young = both.find((d) => d.id !== old!.id)!;

  // The old event is now 1.5 h old, the young one 0.5 h: only the old one is past the retention.
  ts.clock.advance(HOUR / 2 + 60_000);
  await waitFor('the old event to be pruned', async () => (await api('GET', `/apps/kept/webhook-deliveries/${old!.id}`)).status === 404);
  t.equal((await api('GET', `/apps/kept/webhook-events/${old!.event.id}`)).status, 404, 'the old event is gone');
  t.same((await deliveries('kept')).map((d) => d.id), [young.id], 'the young delivery is still listed');
  t.same((await events('kept')).map((e) => e.id), [young.event.id], 'and its event');
  const stuck = (await deliveries('stuck'))[0];
  t.ok(stuck && stuck.status !== 'succeeded' && stuck.status !== 'failed', `a delivery still retried is kept past the retention (${stuck?.status})`);
  t.equal((await api('GET', `/apps/stuck/webhook-events/${stuckEvent.id}`)).status, 200, 'with its event');

  // Past the retry horizon (24 h) the stuck delivery ends (failed), and is pruned in turn.
  ts.clock.advance(25 * HOUR);
  await waitFor('the stuck delivery to end and be pruned', async () => {
    if ((await deliveries('stuck')).length === 0) return true;
    ts.clock.advance(61_000); // the next pruning run
    return false;
  });
  t.same(await events('stuck'), [], 'its event is pruned too');

  // A destroyed app's webhooks (kept to deliver its last events) go with its destroy event.
  const appId = (await http('GET', `${ts.api}/apps/kept`, { headers: bearer(key) })).json.id as string;
  const webhooksOfKept = () => ts.server.store.metadata.range(appWebhooks, { prefix: appId });
  t.equal((await webhooksOfKept()).length, 1);
  t.equal((await http('DELETE', `${ts.api}/apps/kept`, { headers: bearer(key) })).status, 200);
  t.equal((await webhooksOfKept()).length, 1, 'kept while the app\'s last events may be delivered');
  ts.clock.advance(HOUR + 61_000);
  await waitFor('the destroyed app\'s webhook to be pruned', async () => {
    if ((await webhooksOfKept()).length === 0) return true;
    ts.clock.advance(61_000);
    return false;
  });
}

t.test('LMDB: events and ended deliveries pruned after the retention, retried ones kept', (t) => scenario(t, undefined));
t.test('PostgreSQL: the same', { skip: postgresSkip() }, async (t) => {
  const pg = await startPostgres();
  t.teardown(() => pg.stop());
  await scenario(t, pg.connectionString);
});
