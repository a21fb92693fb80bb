/**
 * App webhooks through the Platform API (docs/webhooks.md) on a server in this process, with a
 * real receiver on loopback (allowed by SLIPWAY_WEBHOOK_ALLOWED_HOSTS): create/list/info/update/
 * delete, the 422s for bad input, the secret returned once, a config-var release delivered as
 * `api:release` signed with HMAC-SHA256, a formation change as `api:formation`, the delivery and
 * event logs, `notify` vs `sync` against a receiver that is down then back, and a hanging
 * receiver recorded as a timeout without slowing the request that caused the event; a host name
 * that resolves to loopback refused at delivery time unless the operator lists it, and a
 * redirect recorded as a failure and not followed.
 */
import t from 'tap';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { bearer, createApp, http } from '../helpers/http.js';
import { signatureValid, startReceiver } from '../helpers/webhook-receiver.js';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { isForbiddenAddress } from '../../engine/webhooks/destination.js';

const receiver = await startReceiver();
// This machine's host name (it resolves to a loopback address through /etc/hosts on most
// systems): listed with the receiver's port only, so the same name on another port is refused.
const HOST = hostname().toLowerCase();
const ts = await startInProcess({ env: { SLIPWAY_WEBHOOK_ALLOWED_HOSTS: `127.0.0.1,${HOST}:${receiver.port}`, SLIPWAY_WEBHOOK_TIMEOUT: '1', SLIPWAY_WEBHOOK_POLL_INTERVAL: '0.1' } });
t.teardown(async () => { await ts.stop(); await receiver.close(); });
const key = ts.operator.apiKey;
const ACCEPT = 'application/vnd.heroku+json; version=3.webhooks';

const api = (method: string, path: string, body?: unknown) =>
  http(method, ts.api + path, { headers: { ...bearer(key), accept: ACCEPT, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

// No top-level assertion before the subtests: tap ends its root test after one once the process
// is idle, which ran the teardown while the next request was in flight.
for (const name of ['hooked', 'quiet']) {
  const r = await createApp(ts.api, key, name);
  if (r.status !== 201) throw new Error(`creating app ${name}: ${r.status} ${r.text}`);
}

t.test('bad input is a 422 in the platform\'s error shape and creates nothing', async (t) => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['malformed URL', { include: ['api:release'], level: 'notify', url: 'not a url' }, /valid absolute URL/],
    ['http to a host not allowed', { include: ['api:release'], level: 'notify', url: 'http://example.com/hook' }, /https/],
    ['metadata address', { include: ['api:release'], level: 'notify', url: 'https://169.254.169.254/latest' }, /link-local|private|loopback/],
    ['private address', { include: ['api:release'], level: 'notify', url: 'https://10.1.2.3/hook' }, /private/],
    ['IPv6 loopback', { include: ['api:release'], level: 'notify', url: 'https://[::1]/hook' }, /loopback/],
    ['IPv4-mapped loopback', { include: ['api:release'], level: 'notify', url: 'https://[::ffff:127.0.0.1]/hook' }, /loopback/],
    ['localhost', { include: ['api:release'], level: 'notify', url: 'https://localhost/hook' }, /loopback/],
    ['a name under .localhost', { include: ['api:release'], level: 'notify', url: 'https://api.localhost:8443/hook' }, /loopback/],
    ['unknown entity', { include: ['api:release', 'api:nothing'], level: 'notify', url: 'https://example.com/hook' }, /unknown entity "api:nothing"/],
    ['empty include', { include: [], level: 'notify', url: 'https://example.com/hook' }, /include/],
    ['wrong level', { include: ['api:release'], level: 'often', url: 'https://example.com/hook' }, /level must be "notify" or "sync"/],
    ['credentials in URL', { include: ['api:release'], level: 'sync', url: 'https://u:p@example.com/hook' }, /credentials/],
  ];
  for (const [what, body, message] of cases) {
    const r = await api('POST', '/apps/hooked/webhooks', body);
    t.equal(r.status, 422, what);
    t.equal(r.json?.id, 'invalid_params', `${what}: platform error id`);
    t.match(r.json?.message, message, `${what}: message`);
    t.notOk(r.headers['heroku-webhook-secret'], `${what}: no secret`);
  }
  t.same((await api('GET', '/apps/hooked/webhooks')).json, [], 'nothing was created');
});

t.test('create, list, info, update and delete; the secret is shown once', async (t) => {
  const created = await api('POST', '/apps/quiet/webhooks', { include: ['api:app'], level: 'notify', url: 'https://example.com/a' });
  t.equal(created.status, 201);
  const secret = created.headers['heroku-webhook-secret'];
  t.match(secret, /^[0-9a-f]{64}$/, 'a generated secret in Heroku-Webhook-Secret');
  const id = created.json.id;
  t.match(created.json, { include: ['api:app'], level: 'notify', url: 'https://example.com/a', app: { name: 'quiet' } });
  t.notOk(JSON.stringify(created.json).includes(secret), 'the body does not carry the secret');
  const info = await api('GET', `/apps/quiet/webhooks/${id}`);
  t.equal(info.status, 200);
  t.notOk(info.headers['heroku-webhook-secret'], 'info does not repeat the secret');
  t.notOk(JSON.stringify(info.json).includes(secret));
  const patched = await api('PATCH', `/apps/quiet/webhooks/${id}`, { level: 'sync', include: ['api:release', 'api:formation'] });
  t.match(patched.json, { level: 'sync', include: ['api:formation', 'api:release'] });
  t.equal((await api('PATCH', `/apps/quiet/webhooks/${id}`, { level: 'sometimes' })).status, 422, 'update validates too');
  t.equal((await api('GET', '/apps/quiet/webhooks')).json.length, 1);
  t.equal((await api('DELETE', `/apps/quiet/webhooks/${id}`)).status, 200);
  t.equal((await api('GET', `/apps/quiet/webhooks/${id}`)).status, 404);
  t.same((await api('GET', '/apps/quiet/webhooks')).json, []);
});

t.test('a per-app limit of 10 webhooks', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) {
    const r = await api('POST', '/apps/quiet/webhooks', { include: ['api:app'], level: 'notify', url: `https://example.com/${i}` });
    t.equal(r.status, 201);
    ids.push(r.json.id);
  }
  const over = await api('POST', '/apps/quiet/webhooks', { include: ['api:app'], level: 'notify', url: 'https://example.com/11' });
  t.equal(over.status, 422);
  t.match(over.json.message, /at most 10 webhooks/);
  for (const id of ids) await api('DELETE', `/apps/quiet/webhooks/${id}`);
});

t.test('a release is delivered as api:release, signed, with stable ids; the logs show it', async (t) => {
  const created = await api('POST', '/apps/hooked/webhooks', {
    include: ['api:release', 'api:formation'], level: 'sync', url: receiver.url, secret: 'shh-its-a-secret', authorization: 'Bearer receiver-token-123',
  });
  t.equal(created.status, 201);
  t.equal(created.headers['heroku-webhook-secret'], 'shh-its-a-secret', 'a given secret is echoed once');
  const before = receiver.received.length;
  const r = await http('PATCH', `${ts.api}/apps/hooked/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify({ GREETING: 'hello' }) });
  t.equal(r.status, 200);
  const got = await waitFor('the api:release delivery', () => receiver.received.slice(before).find((x) => x.json?.webhook_metadata?.event?.include === 'api:release'));
  t.ok(signatureValid('shh-its-a-secret', got.body, got.headers['heroku-webhook-hmac-sha256']), 'Heroku-Webhook-Hmac-SHA256 verifies with node:crypto');
  t.notOk(signatureValid('another secret', got.body, got.headers['heroku-webhook-hmac-sha256']), 'and not under another secret');
  t.equal(got.headers.authorization, 'Bearer receiver-token-123', 'the authorization option is sent');
  t.match(got.json, {
    action: 'create', resource: 'release', actor: { email: ts.operator.email },
    data: { version: 1, description: 'Set GREETING config vars', app: { name: 'hooked' } }, previous_data: {},
    webhook_metadata: { webhook: { id: created.json.id }, event: { include: 'api:release' } },
  });
  t.notOk(got.body.includes('hello'), 'config var values are not in the payload');
  t.equal(got.headers['slipway-webhook-event-id'], got.json.id);
  const deliveryId = got.json.webhook_metadata.delivery.id;
  t.equal(got.headers['slipway-webhook-delivery-id'], deliveryId);

  const delivery = await waitFor('the delivery to be recorded', async () => {
    const d = (await api('GET', `/apps/hooked/webhook-deliveries/${deliveryId}`)).json;
    return d?.status === 'succeeded' ? d : undefined;
  });
  t.match(delivery, { event: { id: got.json.id, include: 'api:release' }, webhook: { id: created.json.id, level: 'sync' }, num_attempts: 1, last_attempt: { code: 200, error_class: null } });
  const list = await api('GET', '/apps/hooked/webhook-deliveries');
  t.ok(list.json.some((d: { id: string }) => d.id === deliveryId), 'listed');
  const text = JSON.stringify(list.json) + JSON.stringify((await api('GET', '/apps/hooked/webhook-events')).json);
  t.notOk(text.includes('shh-its-a-secret') || text.includes('receiver-token-123'), 'neither the secret nor the authorization value in the logs');
  const event = await api('GET', `/apps/hooked/webhook-events/${got.json.id}`);
  t.match(event.json, { id: got.json.id, include: 'api:release', payload: { action: 'create', resource: 'release', data: { version: 1 } } });
  t.equal((await api('GET', '/apps/hooked/webhook-deliveries?eq[status]=succeeded')).json.length, list.json.length);
  t.equal((await api('GET', '/apps/hooked/webhook-deliveries?eq[status]=bogus')).status, 422);
  await api('DELETE', `/apps/hooked/webhooks/${created.json.id}`);
});

t.test('sync retries a receiver that is down until it is back; notify tries once', async (t) => {
  const sync = (await api('POST', '/apps/hooked/webhooks', { include: ['api:release'], level: 'sync', url: receiver.url, secret: 's1' })).json;
  const notify = (await api('POST', '/apps/hooked/webhooks', { include: ['api:release'], level: 'notify', url: receiver.url, secret: 's2' })).json;
  await receiver.stop();
  const started = Date.now();
  const r = await http('PATCH', `${ts.api}/apps/hooked/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify({ STEP: 'down' }) });
  t.equal(r.status, 200, 'the request does not wait for the receiver');
  const deliveries = async () => ((await api('GET', '/apps/hooked/webhook-deliveries')).json as any[]).filter((d) => d.num_attempts > 0 && (d.webhook.id === sync.id || d.webhook.id === notify.id));
  const both = await waitFor('both first attempts refused', async () => {
    const ds = await deliveries();
    return ds.length === 2 && ds.every((d) => d.last_attempt?.error_class === 'refused' && d.last_attempt.status === 'failed') ? ds : undefined;
  });
  const s = both.find((d) => d.webhook.id === sync.id);
  const n = both.find((d) => d.webhook.id === notify.id);
  t.equal(n.status, 'failed', 'notify: one attempt, failed');
  t.equal(s.status, 'scheduled', 'sync: scheduled for a retry');
  t.ok(s.next_attempt_at, 'with its next attempt time');
  t.ok(Date.now() - started < 30_000);
  await receiver.start();
  const before = receiver.received.length;
  ts.clock.advance(31_000); // past the first backoff (30 s, less up to 20 % jitter)
  const retried = await waitFor('the sync delivery succeeds on its retry', async () => {
    const d = (await api('GET', `/apps/hooked/webhook-deliveries/${s.id}`)).json;
    return d.status === 'succeeded' ? d : undefined;
  });
  t.equal(retried.num_attempts, 2);
  t.equal(retried.last_attempt.code, 200);
  const got = receiver.received.slice(before);
  t.equal(got.length, 1, 'only the sync webhook got the retry');
  t.equal(got[0]!.json.webhook_metadata.delivery.id, s.id, 'with the same delivery id');
  t.ok(signatureValid('s1', got[0]!.body, got[0]!.headers['heroku-webhook-hmac-sha256']));
  t.equal((await api('GET', `/apps/hooked/webhook-deliveries/${n.id}`)).json.num_attempts, 1, 'notify was not retried');
  await api('DELETE', `/apps/hooked/webhooks/${sync.id}`);
  await api('DELETE', `/apps/hooked/webhooks/${notify.id}`);
});

t.test('a hanging receiver is recorded as a timeout and holds back neither the request nor another app', async (t) => {
  t.equal((await createApp(ts.api, key, 'other')).status, 201);
  const slow = (await api('POST', '/apps/hooked/webhooks', { include: ['api:release'], level: 'notify', url: receiver.url + '?slow' })).json;
  const fast = (await api('POST', '/apps/other/webhooks', { include: ['api:release'], level: 'notify', url: receiver.url + '?fast' })).json;
  receiver.respond = (r) => (r.json?.webhook_metadata?.webhook?.id === slow.id ? 'hang' : 200);
  const t0 = Date.now();
  const r = await http('PATCH', `${ts.api}/apps/hooked/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify({ STEP: 'hang' }) });
  t.equal(r.status, 200);
  t.ok(Date.now() - t0 < 1000, `the request took ${Date.now() - t0} ms, less than the 1 s timeout`);
  await waitFor('the hanging attempt to start', () => receiver.received.some((x) => x.json?.webhook_metadata?.webhook?.id === slow.id));
  await http('PATCH', `${ts.api}/apps/other/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify({ STEP: 'fast' }) });
  await waitFor('the other app\'s delivery while the first hangs', () => receiver.received.some((x) => x.json?.webhook_metadata?.webhook?.id === fast.id));
  const d = await waitFor('the timeout to be recorded', async () => {
    const list = (await api('GET', '/apps/hooked/webhook-deliveries')).json as any[];
    return list.find((x) => x.webhook.id === slow.id && x.status === 'failed');
  });
  t.equal(d.last_attempt.error_class, 'timeout');
  t.equal(d.last_attempt.code, null);
  t.ok(d.last_attempt.duration_ms >= 900 && d.last_attempt.duration_ms < 5000, `attempt lasted ${d.last_attempt.duration_ms} ms (timeout 1 s)`);
  receiver.respond = () => 200;
});


const resolved = await lookup(HOST, { all: true }).catch(() => []);
const hostIsLocal = resolved.length > 0 && resolved.every((a) => isForbiddenAddress(a.address));
t.test('a host name resolving to loopback is refused at delivery, unless listed; redirects are not followed', {
  skip: hostIsLocal ? false : `this machine's host name ${HOST} does not resolve to loopback or private addresses only (${JSON.stringify(resolved)}): add "127.0.1.1 ${HOST}" to /etc/hosts`,
}, async (t) => {
  t.comment(`${HOST} resolves to ${resolved.map((a) => a.address).join(', ')}`);
  // https to the name on another port: accepted at creation (a name, not an address), refused
  // once resolved. Were it not refused, TLS to the plain-http receiver would fail with cause tls.
  const other = await startReceiver();
  t.teardown(() => other.close());
  const refusedHook = (await api('POST', '/apps/hooked/webhooks', { include: ['api:release'], level: 'sync', url: `https://${HOST}:${other.port}/hook`, secret: 'r1' })).json;
  t.ok(refusedHook.id, 'a host name is accepted at creation');
  const listedHook = (await api('POST', '/apps/hooked/webhooks', { include: ['api:release'], level: 'notify', url: `http://${HOST}:${receiver.port}/listed`, secret: 'r2' })).json;
  t.ok(listedHook.id, 'http to the listed host:port is accepted');
  const redirected = (await api('POST', '/apps/hooked/webhooks', { include: ['api:release'], level: 'notify', url: `${receiver.url}?redirect`, secret: 'r3' })).json;
  receiver.respond = (r) => (r.json?.webhook_metadata?.webhook?.id === redirected.id ? { status: 302, headers: { location: `${receiver.url}?followed` } } : 200);
  const before = receiver.received.length;
  const r = await http('PATCH', `${ts.api}/apps/hooked/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify({ STEP: 'ssrf' }) });
  t.equal(r.status, 200);
  const settled = await waitFor('the three first attempts', async () => {
    const list = (await api('GET', '/apps/hooked/webhook-deliveries')).json as any[];
    const pick = (id: string) => list.find((d) => d.webhook.id === id && d.num_attempts > 0 && d.status !== 'pending' && d.status !== 'retrying');
    const ds = [pick(refusedHook.id), pick(listedHook.id), pick(redirected.id)];
    return ds.every(Boolean) ? ds : undefined;
  });
  const [refused, listed, redirect] = settled;
  t.match(refused.last_attempt, { code: null, error_class: 'ssrf-refused' }, `${HOST} on a port not listed: refused after resolution, cause recorded`);
  t.equal(refused.status, 'scheduled', 'a sync delivery refused this way is retried like any failure');
  t.equal(other.received.length, 0, 'nothing reached the other receiver');
  t.match(listed, { status: 'succeeded', last_attempt: { code: 200 } }, `${HOST}:${receiver.port} listed: delivered`);
  t.match(redirect, { status: 'failed', last_attempt: { code: 302, error_class: 'http-status' } }, 'a 302 is a failed attempt');
  const got = receiver.received.slice(before);
  t.ok(got.some((x) => x.json?.webhook_metadata?.webhook?.id === listedHook.id), 'the listed destination got its delivery');
  t.equal(got.filter((x) => x.json?.webhook_metadata?.webhook?.id === redirected.id).length, 1, 'the redirect was not followed (one request for that webhook)');
  receiver.respond = () => 200;
  for (const w of [refusedHook, listedHook, redirected]) await api('DELETE', `/apps/hooked/webhooks/${w.id}`);
});
