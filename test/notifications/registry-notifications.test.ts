/**
 * Registry notifications end to end (docs/notifications.md): `slipway serve` with an endpoint in
 * SLIPWAY_NOTIFICATIONS_ENDPOINTS, skopeo pushing, pulling, copying across repositories (a blob
 * mount) and deleting, and a node:http receiver that reads distribution's envelope as
 * distribution's consumers do. The receiver gets each event with distribution's fields; a push
 * while the endpoint is down is delivered once it is back, also by the next start after a SIGKILL
 * (with the event id recorded before it); the endpoint's Authorization value is
 * sent but never appears in the server's output; a refused push records nothing.
 */
import t from 'tap';
import { join } from 'node:path';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { logLine, startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { tempDir } from '../helpers/server.js';
import { NotificationReceiver } from '../helpers/notification-receiver.js';
import type { DistributionEvent } from '../../engine/notifications/envelope.js';

const SECRET = 'Bearer notification-s3cr3t-9f2c';
const V2S2 = 'application/vnd.docker.distribution.manifest.v2+json';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('registry notifications reach a distribution consumer', { skip: skopeoSkip() }, async (t) => {
  const top = t;
  const receiver = await NotificationReceiver.start();
  t.teardown(() => receiver.down());
  const tmp = tempDir();
  t.teardown(tmp.cleanup);
  const endpoints = [{ name: 'hooks', url: receiver.url, headers: { Authorization: [SECRET] }, timeout: '2s', threshold: 2, backoff: '300ms' }];
  const dataDir = join(tmp.dir, 'data');
  const env = { SLIPWAY_NOTIFICATIONS_ENDPOINTS: JSON.stringify(endpoints), SLIPWAY_LOG_LEVEL: 'debug' };
  const server = await startSpawned({ dataDir, env });
  t.teardown(() => server.stop());
  const key = server.apiKey!;
  const creds = `${server.email}:${key}`;
  const registry = server.urls.registry;
  const host = new URL(registry).host;
  t.equal((await createApp(server.urls.api, key, 'myapp')).status, 201);
  const img = await buildImage(join(tmp.dir, 'img'), sampleSpec());
  const manifestSize = img.manifest.length;
  const layerSize = (digest: string) => img.layers.find((l) => l.digest === digest)!.bytes.length;

  /** The first event received that `match` accepts, waited for. */
  const eventWhere = (what: string, match: (e: DistributionEvent) => boolean) =>
    waitFor(what, () => receiver.events().find(match), { timeoutMs: 30_000, intervalMs: 50 });

  t.test('push: a manifest event with the tag, the request and the pushing account', async (t) => {
    const push = await skopeo(['copy', '--dest-creds', creds, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/web:v1`]);
    t.equal(push.code, 0, push.stderr);
    const e = await eventWhere('the push event', (x) => x.action === 'push' && x.target.repository === 'myapp/web');
    t.match(e, {
      id: UUID,
      action: 'push',
      target: {
        mediaType: V2S2, size: manifestSize, length: manifestSize, digest: img.manifestDigest, repository: 'myapp/web', tag: 'v1',
        url: `${registry}/v2/myapp/web/manifests/${img.manifestDigest}`,
      },
      request: { id: /\S/, addr: '127.0.0.1', host, method: 'PUT', useragent: /containers|skopeo/i },
      actor: { name: server.email },
      source: { addr: new RegExp(`:${new URL(registry).port}$`), instanceID: UUID },
    });
    t.ok(Math.abs(Date.parse(e.timestamp) - Date.now()) < 60_000, 'timestamp is now');
    const request = receiver.received.find((r) => r.events.includes(e))!;
    t.equal(request.headers.authorization, SECRET, 'the endpoint\'s header is sent');
    t.same(request.events.length, 1, 'one event per push envelope');
  });

  t.test('pull: a manifest GET is a pull event (buffered, delivered within seconds)', async (t) => {
    const back = join(tmp.dir, 'back');
    const pull = await skopeo(['copy', '--src-creds', creds, '--src-tls-verify=false', `docker://${host}/myapp/web:v1`, `dir:${back}`]);
    t.equal(pull.code, 0, pull.stderr);
    const e = await eventWhere('the pull event', (x) => x.action === 'pull');
    t.match(e, {
      id: UUID, action: 'pull',
      target: { mediaType: V2S2, size: manifestSize, length: manifestSize, digest: img.manifestDigest, repository: 'myapp/web', tag: 'v1', url: `${registry}/v2/myapp/web/manifests/${img.manifestDigest}` },
      request: { method: 'GET', host, addr: '127.0.0.1' },
      actor: { name: server.email },
    });
    const head = await http('HEAD', `${registry}/v2/myapp/web/manifests/${img.manifestDigest}`, { headers: basic('_', key) });
    t.equal(head.status, 200);
    const pulls = receiver.events().filter((x) => x.action === 'pull').length;
    const get = await http('GET', `${registry}/v2/myapp/web/manifests/${img.manifestDigest}`, { headers: basic('_', key) });
    t.equal(get.status, 200);
    await eventWhere('the pull by digest', (x) => x.action === 'pull' && x.request.id === get.headers['request-id']);
    t.equal(receiver.events().filter((x) => x.action === 'pull').length, pulls + 1, 'the HEAD was no pull; the GET was one');
    t.notOk(receiver.events().find((x) => x.request.id === get.headers['request-id'])!.target.tag, 'no tag on a pull by digest');
  });

  t.test('mount: a copy across repositories mounts the blobs', async (t) => {
    const copy = await skopeo(['copy', '--src-creds', creds, '--dest-creds', creds, '--src-tls-verify=false', '--dest-tls-verify=false', `docker://${host}/myapp/web:v1`, `docker://${host}/myapp/worker:v1`]);
    t.equal(copy.code, 0, copy.stderr);
    // skopeo mounts the blobs it read from the source repository (the layers; it uploads the config).
    for (const { digest } of img.layers) {
      const e = await eventWhere(`the mount of ${digest}`, (x) => x.action === 'mount' && x.target.digest === digest);
      t.match(e, {
        action: 'mount',
        target: { mediaType: 'application/octet-stream', repository: 'myapp/worker', fromRepository: 'myapp/web', url: `${registry}/v2/myapp/worker/blobs/${digest}`, size: layerSize(digest), length: layerSize(digest) },
        request: { method: 'POST', host },
        actor: { name: server.email },
      }, `mount of ${digest}`);
    }
  });

  t.test('delete: by digest (skopeo) and by tag', async (t) => {
    const del = await skopeo(['delete', '--creds', creds, '--tls-verify=false', `docker://${host}/myapp/worker@${img.manifestDigest}`]);
    t.equal(del.code, 0, del.stderr);
    const e = await eventWhere('the delete by digest', (x) => x.action === 'delete' && x.target.repository === 'myapp/worker');
    t.match(e, { action: 'delete', target: { repository: 'myapp/worker', digest: img.manifestDigest }, request: { method: 'DELETE' }, actor: { name: server.email } });
    t.notOk(e.target.url, 'a delete carries digest and repository only, as distribution\'s');
    const byTag = await http('DELETE', `${registry}/v2/myapp/web/manifests/v1`, { headers: basic('_', key) });
    t.equal(byTag.status, 202);
    const tagged = await eventWhere('the tag delete', (x) => x.action === 'delete' && x.target.tag === 'v1');
    t.same(tagged.target, { repository: 'myapp/web', tag: 'v1' });
  });

  t.test('a refused push records nothing', async (t) => {
    const before = receiver.events().length;
    const bogus = JSON.stringify({ schemaVersion: 2, mediaType: V2S2, config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: 2, digest: sha256('{}') }, layers: [] });
    const r = await http('PUT', `${registry}/v2/myapp/web/manifests/bogus`, { headers: { ...basic('_', key), 'content-type': V2S2 }, body: bogus });
    t.equal(r.status, 400);
    // A later push's event arrives; the refused one's never does.
    const ok = await skopeo(['copy', '--dest-creds', creds, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/web:after`]);
    t.equal(ok.code, 0, ok.stderr);
    await eventWhere('the later push', (x) => x.action === 'push' && x.target.tag === 'after');
    t.notOk(receiver.events().slice(before).some((x) => x.target.tag === 'bogus'), 'no event for the refused manifest');
  });

  t.test('endpoint down, then back: the push is delivered after retries', async (t) => {
    await receiver.down();
    const push = await skopeo(['copy', '--dest-creds', creds, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/web:while-down`]);
    t.equal(push.code, 0, 'the push does not wait for the endpoint');
    await waitFor('a failed attempt in the log', () => server.output().split('\n').some((l) => l.includes('registry notification not delivered yet') && l.includes('"cause":"refused"')), { timeoutMs: 30_000, intervalMs: 50 });
    await receiver.up();
    const e = await eventWhere('the push made while the endpoint was down', (x) => x.action === 'push' && x.target.tag === 'while-down');
    t.equal(e.target.digest, img.manifestDigest);
    await waitFor('the success after retries in the log', () => server.output().includes('registry notification delivered after retries'), { timeoutMs: 10_000, intervalMs: 50 });
  });

  let restarted: SpawnedSlipway | undefined;
  t.test('SIGKILL after the commit, before the delivery: delivered by the next start, same event id', async (t) => {
    await receiver.down();
    const from = server.output().length;
    const push = await skopeo(['copy', '--dest-creds', creds, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/web:before-kill`]);
    t.equal(push.code, 0, push.stderr);
    const failedEvents = () => new Set(server.output().slice(from).split('\n').map((l) => logLine(l)).filter((l) => l?.msg === 'registry notification not delivered yet').map((l) => l!.event as string));
    await waitFor('an attempt refused', () => failedEvents().size > 0, { timeoutMs: 30_000, intervalMs: 50 });
    const logged = failedEvents();
    await server.kill();
    await receiver.up();
    restarted = await startSpawned({ dataDir, env });
    top.teardown(() => restarted!.stop());
    const e = await eventWhere('the push made before the kill', (x) => x.action === 'push' && x.target.tag === 'before-kill');
    t.ok(logged.has(e.id), 'the event id of the attempt before the kill is the one delivered');
    t.equal(e.target.digest, img.manifestDigest);
  });

  t.test('every request was well formed; the header value never reached the logs', async (t) => {
    for (const r of receiver.received) t.same(r.problems, [], 'a distribution consumer reads the envelope');
    const ids = receiver.events().map((e) => e.id);
    t.equal(new Set(ids).size, ids.length, 'event ids are unique');
    t.match(server.output(), /registry notification endpoint configured/);
    t.notMatch(server.output(), /s3cr3t/, 'the Authorization value is not in the output');
    t.notMatch(restarted?.output() ?? '', /s3cr3t/, 'nor in the restarted node\'s');
    const metrics = (await http('GET', `${(restarted ?? server).urls.admin}/metrics`)).text;
    t.match(metrics, /^slipway_notification_pulls_dropped_total 0$/m, 'no pull dropped');
    t.match(metrics, /^slipway_notification_pulls_pending \d+$/m);
  });
});
