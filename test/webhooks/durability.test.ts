/**
 * Webhook deliveries survive a crash (docs/webhooks.md, "Guarantees and bounds" and "A dead
 * node"), with `slipway serve` as a child process SIGKILLed by the test and a real receiver on
 * loopback:
 * 1. killed between the commit and the delivery (the receiver refused every attempt so far): after
 *    a restart on the same data the event is delivered with the event id and delivery id the
 *    delivery log showed before the kill;
 * 2. killed while an attempt is in flight (the receiver hangs): after the restart the same
 *    delivery is made again (at least once) with the same ids, and succeeds;
 * 3. two nodes on one PostgreSQL: the node holding the lease of a hanging attempt is killed; the
 *    other delivers within the documented bound (timeout + 5 s + poll interval + 1 s after the death).
 * Kill delays are random from a printed seed (SLIPWAY_TEST_SEED replays one).
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { bearer, createApp, http } from '../helpers/http.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { tempDir } from '../helpers/server.js';
import { prng } from '../helpers/h1-generator.js';
import { startReceiver, type Received } from '../helpers/webhook-receiver.js';

const TIMEOUT_S = 2;
const POLL_S = 0.1;
const ENV = {
  SLIPWAY_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SLIPWAY_WEBHOOK_TIMEOUT: String(TIMEOUT_S),
  SLIPWAY_WEBHOOK_POLL_INTERVAL: String(POLL_S), SLIPWAY_WEBHOOK_RETRY_BASE: '0.3',
};
const ACCEPT = 'application/vnd.heroku+json; version=3.webhooks';
const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`# seed ${seed} (SLIPWAY_TEST_SEED=${seed} replays it)`);
const random = prng(seed);

const api = (base: string, key: string, method: string, path: string, body?: unknown) =>
  http(method, base + path, { headers: { ...bearer(key), accept: ACCEPT, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
const deliveryIdOf = (r: Received): string | undefined => r.json?.webhook_metadata?.delivery?.id;
/** A random pause of up to `maxMs` (the kill's timing), drawn from the seeded generator. */
const jitter = (maxMs: number) => new Promise((resolve) => setTimeout(resolve, Math.floor(random() * maxMs)));

const receiver = await startReceiver();
const data = tempDir();
let node: SpawnedSlipway = await startSpawned({ dataDir: data.dir, env: ENV });
t.teardown(async () => { await node.kill(); await receiver.close(); data.cleanup(); });
const key = node.apiKey!;
// Fixtures without a top-level assertion (tap would end its root test once idle).
{
  const r = await createApp(node.urls.api, key, 'durable');
  if (r.status !== 201) throw new Error(`creating app durable: ${r.status} ${r.text}`);
  const w = await api(node.urls.api, key, 'POST', '/apps/durable/webhooks', { include: ['api:release'], level: 'sync', url: receiver.url, secret: 'durable-secret' });
  if (w.status !== 201) throw new Error(`creating the webhook: ${w.status} ${w.text}`);
}
const setVar = (n: SpawnedSlipway, app: string, value: string) =>
  http('PATCH', `${n.urls.api}/apps/${app}/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify({ STEP: value }) });

t.test('killed between the commit and the delivery: delivered after the restart with the same ids', async (t) => {
  await receiver.stop();
  t.equal((await setVar(node, 'durable', 'before-kill')).status, 200, 'the change is acknowledged');
  const logged = await waitFor('the refused attempt in the delivery log', async () => {
    const list = (await api(node.urls.api, key, 'GET', '/apps/durable/webhook-deliveries')).json as any[];
    return list.find((d) => d.last_attempt?.error_class === 'refused' && d.status === 'scheduled');
  });
  await jitter(500); // the worker may be mid-retry now
  await node.kill();
  await receiver.start();
  const before = receiver.received.length;
  node = await startSpawned({ dataDir: data.dir, env: ENV });
  const got = await waitFor('the delivery after the restart', () => receiver.received.slice(before).find((r) => deliveryIdOf(r) === logged.id));
  t.equal(got.json.id, logged.event.id, 'the event id the log showed before the kill');
  t.equal(got.headers['slipway-webhook-event-id'], logged.event.id);
  t.equal(got.headers['slipway-webhook-delivery-id'], logged.id, 'the delivery id the log showed before the kill');
  t.match(got.json, { resource: 'release', data: { description: 'Set STEP config vars', app: { name: 'durable' } } });
  const d = await waitFor('the delivery recorded as succeeded', async () => {
    const x = (await api(node.urls.api, key, 'GET', `/apps/durable/webhook-deliveries/${logged.id}`)).json;
    return x?.status === 'succeeded' ? x : undefined;
  });
  t.ok(d.num_attempts > logged.num_attempts, `attempts ${logged.num_attempts} before the kill, ${d.num_attempts} in all`);
  t.equal(d.last_attempt.code, 200);
});

t.test('killed while an attempt is in flight: made again after the restart with the same ids', async (t) => {
  receiver.respond = () => 'hang';
  const before = receiver.received.length;
  t.equal((await setVar(node, 'durable', 'mid-delivery')).status, 200);
  const first = await waitFor('the attempt to reach the hanging receiver', () => receiver.received.slice(before).find((r) => r.json?.data?.description === 'Set STEP config vars' && r.json?.data?.version === 2));
  await jitter(TIMEOUT_S * 1000 / 2); // still within the attempt's timeout
  await node.kill();
  const killedAt = Date.now();
  t.ok(killedAt - first.at < TIMEOUT_S * 1000, `killed ${killedAt - first.at} ms into the attempt (timeout ${TIMEOUT_S} s)`);
  receiver.respond = () => 200;
  node = await startSpawned({ dataDir: data.dir, env: ENV });
  const id = deliveryIdOf(first)!;
  const again = await waitFor('the attempt after the restart', () => receiver.received.slice(before).find((r) => r !== first && deliveryIdOf(r) === id));
  t.equal(again.json.id, first.json.id, 'the same event id');
  t.equal(again.headers['slipway-webhook-delivery-id'], id, 'the same delivery id');
  const { attempt: firstAttempt, ...firstMeta } = first.json.webhook_metadata;
  const { attempt: againAttempt, ...againMeta } = again.json.webhook_metadata;
  t.same({ ...again.json, webhook_metadata: againMeta }, { ...first.json, webhook_metadata: firstMeta }, 'the same payload');
  t.not(againAttempt.id, firstAttempt.id, 'a new attempt id');
  const d = await waitFor('the delivery recorded as succeeded', async () => {
    const x = (await api(node.urls.api, key, 'GET', `/apps/durable/webhook-deliveries/${id}`)).json;
    return x?.status === 'succeeded' ? x : undefined;
  });
  t.equal(d.num_attempts, 2, 'the interrupted attempt and the one after the restart');
  t.equal(receiver.received.slice(before).filter((r) => deliveryIdOf(r) === id).length, 2, 'received twice (at least once), no more');
});

/** The pid of the process whose TCP socket has local port `port` (`ss -tnp`). */
function pidOfPort(port: number): number | undefined {
  const out = execFileSync('ss', ['-tnpH', `( sport = :${port} )`], { encoding: 'utf8' });
  const m = /pid=(\d+)/.exec(out);
  return m ? Number(m[1]) : undefined;
}

t.test('two nodes on one PostgreSQL: the lease holder dies, the other delivers within the bound', { skip: postgresSkip() }, async (t) => {
  const pg = await startPostgres();
  const shared = tempDir();
  const nodes: SpawnedSlipway[] = [];
  t.teardown(async () => { for (const n of nodes) await n.kill(); await pg.stop(); shared.cleanup(); });
  const opts = { dataDir: shared.dir, databaseUrl: pg.connectionString, env: ENV, startTimeoutMs: 120_000 };
  nodes.push(await startSpawned(opts));
  nodes.push(await startSpawned(opts));
  const [a] = nodes as [SpawnedSlipway, SpawnedSlipway];
  const ckey = a.apiKey!;
  t.equal((await createApp(a.urls.api, ckey, 'clustered')).status, 201);
  t.equal((await api(a.urls.api, ckey, 'POST', '/apps/clustered/webhooks', { include: ['api:release'], level: 'sync', url: receiver.url })).status, 201);
  let hung = false;
  receiver.respond = (r) => (r.json?.data?.app?.name === 'clustered' && !hung ? ((hung = true), 'hang') : 200);
  const before = receiver.received.length;
  const r = await http('PATCH', `${a.urls.api}/apps/clustered/config-vars`, { headers: { ...bearer(ckey), 'content-type': 'application/json' }, body: JSON.stringify({ STEP: 'cluster' }) });
  t.equal(r.status, 200);
  const first = await waitFor('the first attempt (hanging)', () => receiver.received.slice(before).find((x) => x.json?.data?.app?.name === 'clustered'));
  const pid = pidOfPort(first.remotePort!);
  const holder = nodes.find((n) => n.proc.pid === pid);
  t.ok(holder, `the attempt came from a node (pid ${pid})`);
  if (!holder) return;
  const survivor = nodes.find((n) => n !== holder)!;
  await jitter(TIMEOUT_S * 1000 / 2);
  await holder.kill();
  const killedAt = Date.now();
  const id = deliveryIdOf(first)!;
  const again = await waitFor('the survivor\'s attempt', () => receiver.received.slice(before).find((x) => x !== first && deliveryIdOf(x) === id), { timeoutMs: 30_000 });
  const boundMs = (TIMEOUT_S + 5 + POLL_S + 1) * 1000; // docs/webhooks.md: + 1 s for the next pass's claim and request
  t.ok(again.at - killedAt <= boundMs, `delivered ${again.at - killedAt} ms after the death (bound ${boundMs} ms; killed ${killedAt - first.at} ms into the attempt)`);
  t.equal(again.json.id, first.json.id, 'the same event id');
  const d = await waitFor('the delivery recorded as succeeded', async () => {
    const x = (await api(survivor.urls.api, ckey, 'GET', `/apps/clustered/webhook-deliveries/${id}`)).json;
    return x?.status === 'succeeded' ? x : undefined;
  });
  t.equal(d.num_attempts, 2);
});
