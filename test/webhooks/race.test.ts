/**
 * Race test of app webhooks (docs/webhooks.md "Guarantees and bounds") through the Platform API:
 * config-var changes on several apps sent concurrently at seeded random times, some of them
 * refused (an invalid name, before any transaction; or config vars over 32 KiB, thrown inside the
 * release's transaction, which rolls back), each app with two `sync` webhooks pointing at two
 * node:http receivers that answer 200, 500 or hang past the 1 s timeout at random (always 200
 * from the third attempt, so the run ends). The engine clock is moved past the retry delays once
 * no attempt is in flight. Invariants at the end:
 * - every committed release (the app's release list) produced exactly one `api:release` event,
 *   and every accepted request one release; a refused request none, and nothing was delivered
 *   for it;
 * - every (event, webhook) pair has exactly one delivery, and it succeeded;
 * - each receiver saw, per delivery id, exactly as many requests as the delivery log's attempts,
 *   each with the same delivery and event ids, attempt numbers 1..n, and a valid signature.
 */
import t from 'tap';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { bearer, createApp, http } from '../helpers/http.js';
import { signatureValid, startReceiver, type Received } from '../helpers/webhook-receiver.js';
import { rng, testSeed } from '../faults/traffic.js';

const random = rng(testSeed());
t.comment(`webhook race seed ${random.seed} (replay with SLIPWAY_TEST_SEED=${random.seed})`);

const APPS = ['race-a', 'race-b', 'race-c', 'race-d'];
const CHANGES_PER_APP = 9;

const receivers = [await startReceiver(), await startReceiver()];
const ts = await startInProcess({ env: { SLIPWAY_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SLIPWAY_WEBHOOK_TIMEOUT: '1', SLIPWAY_WEBHOOK_POLL_INTERVAL: '0.1' } });
t.teardown(async () => { await ts.stop(); for (const r of receivers) await r.close(); });
const key = ts.operator.apiKey;
const ACCEPT = 'application/vnd.heroku+json; version=3.webhooks';
const api = (method: string, path: string, body?: unknown) =>
  http(method, ts.api + path, { headers: { ...bearer(key), accept: ACCEPT, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

// The receivers' answers: drawn from the seeded stream in arrival order (the order itself is
// the race's), always 200 from the third attempt so every delivery ends.
for (const r of receivers) {
  r.respond = (req: Received) => {
    if (Number(req.headers['slipway-webhook-attempt']) >= 3) return 200;
    const x = random.next();
    return x < 0.55 ? 200 : x < 0.85 ? 500 : 'hang';
  };
}

t.test('concurrent releases across apps: one event each, every delivery attempt seen once and recorded once', async (t) => {
  const secrets = new Map<string, string>(); // webhook id → secret
  for (const app of APPS) {
    t.equal((await createApp(ts.api, key, app)).status, 201, `app ${app} created`);
    for (const [i, r] of receivers.entries()) {
      const secret = `secret-${app}-${i}-${random.int(0, 1e9)}`;
      const w = await api('POST', `/apps/${app}/webhooks`, { include: ['api:release'], level: 'sync', url: r.url, secret });
      t.equal(w.status, 201);
      secrets.set(w.json.id, secret);
    }
  }

  type Change = { app: string; kind: 'ok' | 'bad-name' | 'too-big'; name: string; status?: number };
  const changes: Change[] = [];
  for (const app of APPS) {
    for (let i = 0; i < CHANGES_PER_APP; i++) {
      const x = random.next();
      changes.push({ app, kind: x < 0.7 ? 'ok' : x < 0.85 ? 'bad-name' : 'too-big', name: `V${i}_${random.int(0, 1e6)}` });
    }
  }
  const started = Date.now();
  await Promise.all(changes.map(async (c) => {
    await new Promise((resolve) => setTimeout(resolve, random.int(0, 1500)));
    const body = c.kind === 'ok' ? { [c.name]: `value-${c.name}` }
      : c.kind === 'bad-name' ? { [`9${c.name}`]: 'x' }
      : { [c.name]: 'x'.repeat(33 * 1024) }; // over the 32 KiB of all config vars: refused inside the transaction
    const r = await http('PATCH', `${ts.api}/apps/${c.app}/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify(body) });
    c.status = r.status;
  }));
  t.comment(`${changes.length} changes sent in ${Date.now() - started} ms`);
  for (const c of changes) t.equal(c.status, c.kind === 'ok' ? 200 : 422, `${c.app} ${c.kind} ${c.name}: ${c.status}`);

  // Releases and events: a bijection per app.
  const eventIds = new Set<string>();
  let expectedDeliveries = 0;
  for (const app of APPS) {
    const releases = (await http('GET', `${ts.api}/apps/${app}/releases`, { headers: bearer(key) })).json as Array<{ version: number; description: string }>;
    const accepted = changes.filter((c) => c.app === app && c.kind === 'ok');
    t.equal(releases.length, accepted.length, `${app}: one release per accepted change`);
    for (const c of changes.filter((c) => c.app === app && c.kind !== 'ok')) {
      t.notOk(releases.some((r) => r.description.includes(c.name)), `${app}: no release for refused ${c.name}`);
    }
    const events = ((await api('GET', `/apps/${app}/webhook-events`)).json as Array<{ id: string; include: string; payload: { data: { version: number } } }>)
      .filter((e) => e.include === 'api:release');
    t.same(events.map((e) => e.payload.data.version).sort((a, b) => a - b), releases.map((r) => r.version).sort((a, b) => a - b), `${app}: exactly one api:release event per release`);
    for (const e of events) eventIds.add(e.id);
    expectedDeliveries += events.length * receivers.length;
  }

  // Let every delivery end, moving the engine clock past the retry delays whenever no attempt is in flight.
  type Delivery = { id: string; status: string; num_attempts: number; event: { id: string }; webhook: { id: string } };
  const allDeliveries = async () => (await Promise.all(APPS.map(async (app) => (await api('GET', `/apps/${app}/webhook-deliveries`)).json as Delivery[]))).flat();
  let advances = 0;
  const final = await waitFor('every delivery to succeed', async () => {
    const ds = await allDeliveries();
    if (ds.length < expectedDeliveries || ds.some((d) => d.status === 'pending' || d.status === 'retrying')) return undefined;
    if (ds.every((d) => d.status === 'succeeded')) return ds;
    if (ds.some((d) => d.status !== 'scheduled' && d.status !== 'succeeded')) throw new Error(`unexpected status: ${JSON.stringify(ds.find((d) => d.status !== 'scheduled' && d.status !== 'succeeded'))}`);
    ts.clock.advance(130_000); // past the longest delay before a third attempt (60 s)
    advances++;
    return undefined;
  }, { timeoutMs: 60_000, intervalMs: 100 });
  t.comment(`all ${final.length} deliveries succeeded after ${Date.now() - started} ms and ${advances} clock moves`);

  t.equal(final.length, expectedDeliveries, 'one delivery per (event, webhook)');
  t.equal(new Set(final.map((d) => `${d.event.id} ${d.webhook.id}`)).size, final.length, 'no pair delivered twice');
  t.ok(final.every((d) => eventIds.has(d.event.id)), 'deliveries only of recorded events');
  const byDelivery = new Map<string, Received[]>();
  for (const r of receivers) {
    for (const req of r.received) {
      const id = String(req.headers['slipway-webhook-delivery-id']);
      byDelivery.set(id, [...(byDelivery.get(id) ?? []), req]);
    }
  }
  t.equal(byDelivery.size, final.length, 'the receivers saw exactly the recorded deliveries');
  let attempts = 0;
  let bad = 0;
  for (const d of final) {
    const seen = byDelivery.get(d.id) ?? [];
    attempts += d.num_attempts;
    const problems = [
      seen.length !== d.num_attempts && `${seen.length} requests seen, ${d.num_attempts} attempts recorded`,
      seen.some((s) => s.headers['slipway-webhook-event-id'] !== d.event.id || s.json?.id !== d.event.id) && 'an attempt with another event id',
      seen.some((s) => s.json?.webhook_metadata?.delivery?.id !== d.id) && 'an attempt with another delivery id in the payload',
      seen.map((s) => Number(s.headers['slipway-webhook-attempt'])).sort((a, b) => a - b).join() !== Array.from({ length: d.num_attempts }, (_, i) => i + 1).join() && 'attempt numbers not 1..n',
      seen.some((s) => !signatureValid(secrets.get(d.webhook.id)!, s.body, s.headers['heroku-webhook-hmac-sha256'])) && 'a signature that does not verify',
    ].filter(Boolean);
    if (problems.length > 0) {
      bad++;
      t.fail(`delivery ${d.id}: ${problems.join('; ')}`);
    }
  }
  t.equal(bad, 0, 'every delivery: requests seen = attempts recorded, same ids, signatures valid');
  t.ok(attempts > final.length, `some attempts failed and were retried (${attempts} attempts for ${final.length} deliveries)`);
  const refused = changes.filter((c) => c.kind !== 'ok').map((c) => c.name);
  t.notOk(receivers.some((r) => r.received.some((req) => refused.some((n) => req.body.includes(n)))), 'nothing delivered about a refused change');
});
