/**
 * App webhooks with the platform's own CLI (`heroku` from npm, unmodified) against `slipway serve`
 * (docs/webhooks.md), with a real receiver on loopback (allowed by SLIPWAY_WEBHOOK_ALLOWED_HOSTS):
 * webhooks:add prints the signing secret once; webhooks, webhooks:info, webhooks:deliveries,
 * webhooks:deliveries:info, webhooks:events, webhooks:update and webhooks:remove show the right
 * fields; a release of an image pushed with skopeo reaches the receiver as `api:release`, signed
 * with the secret the CLI printed, naming the image.
 */
import t from 'tap';
import { join } from 'node:path';
import { waitFor } from '../helpers/harness.js';
import { http, bearer } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { startCliServer } from '../helpers/platform-cli.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { signatureValid, startReceiver, type Received } from '../helpers/webhook-receiver.js';

const receiver = await startReceiver();
t.teardown(() => receiver.close());
const { server, key, api, ok, dataDir } = await startCliServer(t, { SLIPWAY_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SLIPWAY_WEBHOOK_POLL_INTERVAL: '0.1' });
const APP = `hooks-${process.pid % 100000}`;
// No top-level assertion before the subtests (tap would end its root test once idle).
const made = await api('POST', '/apps', { name: APP });
if (made.status !== 201) throw new Error(`creating app ${APP}: ${made.status} ${made.text}`);

/** The webhook the CLI added and the secret it printed (set by the first subtest). */
let webhookId = '';
let secret = '';
const releaseTo = (from: number, version: number) => waitFor(`the api:release v${version} delivery`, () =>
  receiver.received.slice(from).find((x: Received) => x.json?.webhook_metadata?.event?.include === 'api:release' && x.json?.data?.version === version));

t.test('add, list, info; a release shows in deliveries, deliveries:info and events', async (t) => {
  const added = await ok(t, ['webhooks:add', '-i', 'api:release,api:formation', '-l', 'sync', '-u', receiver.url, '-a', APP]);
  t.match(added.stdout, '=== Webhooks Signing Secret');
  const m = /^([0-9a-f]{64})$/m.exec(added.stdout);
  t.ok(m, 'the generated secret is printed');
  secret = m?.[1] ?? '';
  t.equal(added.stdout.split(secret).length, 2, 'once');
  t.notMatch(added.all, /no secret found/);

  webhookId = (await api('GET', `/apps/${APP}/webhooks`)).json?.[0]?.id ?? '';
  // Independent commands run side by side: each CLI start costs seconds on a busy machine.
  const [list, info] = await Promise.all([ok(t, ['webhooks', '-a', APP]), ok(t, ['webhooks:info', webhookId, '-a', APP])]);
  const url = receiver.url.replaceAll('.', '\\.');
  t.match(list.stdout, new RegExp(`^\\s*${webhookId}\\s+${url}\\s+(api:formation,api:release|api:release,api:formation)\\s+sync\\s*$`, 'm'), 'webhooks lists id, URL, include, level');
  t.notMatch(list.all, secret, 'the list does not show the secret');
  t.match(info.stdout, `=== ${webhookId}`);
  t.match(info.stdout, /Include:\s+api:(formation|release),api:(release|formation)/);
  t.match(info.stdout, /Level:\s+sync/);
  t.match(info.stdout, new RegExp(`URL:\\s+${url}`));
  t.notMatch(info.all, secret);

  const before = receiver.received.length;
  t.equal((await api('PATCH', `/apps/${APP}/config-vars`, { GREETING: 'hello' })).status, 200);
  const got = await releaseTo(before, 1);
  t.ok(signatureValid(secret, got.body, got.headers['heroku-webhook-hmac-sha256']), 'signed with the secret the CLI printed');
  const deliveryId: string = got.json.webhook_metadata.delivery.id;
  await waitFor('the delivery recorded as succeeded', async () => (await api('GET', `/apps/${APP}/webhook-deliveries/${deliveryId}`)).json?.status === 'succeeded');

  const [deliveries, dinfo, events] = await Promise.all([
    ok(t, ['webhooks:deliveries', '-a', APP]), ok(t, ['webhooks:deliveries:info', deliveryId, '-a', APP]), ok(t, ['webhooks:events', '-a', APP]),
  ]);
  t.match(deliveries.stdout, new RegExp(`${deliveryId}\\s+\\S+\\s+succeeded\\s+api:release\\s+sync\\s+1\\s+200`), 'id, created, status, include, level, attempts, code');
  t.match(dinfo.stdout, `=== ${deliveryId}`);
  t.match(dinfo.stdout, new RegExp(`Event:\\s+${got.json.id}`));
  t.match(dinfo.stdout, new RegExp(`Webhook:\\s+${webhookId}`));
  t.match(dinfo.stdout, /Status:\s+succeeded/);
  t.match(dinfo.stdout, /Include:\s+api:release/);
  t.match(dinfo.stdout, /Attempts:\s+1/);
  t.match(dinfo.stdout, /Code:\s+200/);
  t.match(dinfo.stdout, '=== Event Payload');
  t.match(dinfo.stdout, /"description": "Set GREETING config vars"/);
  t.notMatch(dinfo.all, /hello/, 'no config var value in the payload');

  t.match(events.stdout, new RegExp(`${got.json.id}\\s+release\\s+create\\s+\\d{4}-`), 'event id, resource, action, published at');
});

t.test('a release of a skopeo push is delivered as api:release naming the image', { skip: skopeoSkip() }, async (t) => {
  const img = await buildImage(join(dataDir, 'img-web'), sampleSpec({ config: { Cmd: ['/bin/app', 'web'] } }));
  const push = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${new URL(server.urls.registry).host}/${APP}/web:latest`]);
  t.equal(push.code, 0, push.stderr);
  const before = receiver.received.length;
  // The release the CLI's container:release makes (test/interop/platform-cli-apps.test.ts).
  const released = await http('PATCH', `${server.urls.api}/apps/${APP}/formation`, {
    headers: { ...bearer(key), 'content-type': 'application/json', accept: 'application/vnd.heroku+json; version=3.docker-releases' },
    body: JSON.stringify({ updates: [{ type: 'web', docker_image: img.configDigest }] }),
  });
  t.equal(released.status, 200, released.text);
  const got = await releaseTo(before, 2);
  t.ok(signatureValid(secret, got.body, got.headers['heroku-webhook-hmac-sha256']), 'signed with the secret the CLI printed');
  t.match(got.json, {
    action: 'create', resource: 'release',
    data: {
      version: 2, description: 'Deployed web', app: { name: APP },
      artifacts: [{ type: 'oci-image', id: img.configDigest }],
      processes: { web: { docker_image: img.configDigest, repository: `${APP}/web` } },
    },
    webhook_metadata: { webhook: { id: webhookId }, event: { include: 'api:release' } },
  });
  // Both events are attempted at once (two per app), so they may arrive in either order.
  await waitFor('the formation change as api:formation', () => receiver.received.slice(before).some((x) => x.json?.webhook_metadata?.event?.include === 'api:formation'));
  t.pass('and the formation change as api:formation');
});

t.test('update, then remove', async (t) => {
  const updated = await ok(t, ['webhooks:update', webhookId, '-i', 'api:release', '-l', 'notify', '-u', receiver.url + '?v=2', '-a', APP]);
  t.match(updated.all, `Updating webhook ${webhookId}`);
  t.match((await api('GET', `/apps/${APP}/webhooks/${webhookId}`)).json, { include: ['api:release'], level: 'notify', url: receiver.url + '?v=2' });
  const removed = await ok(t, ['webhooks:remove', webhookId, '-a', APP]);
  t.match(removed.all, `Removing webhook ${webhookId}`);
  t.equal((await api('GET', `/apps/${APP}/webhooks/${webhookId}`)).status, 404);
  t.same((await api('GET', `/apps/${APP}/webhooks`)).json, [], 'gone from the list');
});
