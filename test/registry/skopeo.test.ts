/**
 * Interoperability with a real client: skopeo pushes, inspects, pulls (byte-identical), lists
 * tags and deletes against `slipway serve`, with both login schemes of docs/rules.md Authentication 10.
 */
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { tempDir } from '../helpers/server.js';
import { startSpawned, type SpawnedSlipway } from '../helpers/harness.js';
import { createApp, http, basic } from '../helpers/http.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';

const skip = skopeoSkip();

t.test('skopeo', { skip }, async (t) => {
  const tmp = tempDir();
  const server: SpawnedSlipway = await startSpawned({ dataDir: tmp.dir });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const key = server.apiKey!;
  const host = new URL(server.urls.registry).host;
  t.equal((await createApp(server.urls.api, key, 'myapp')).status, 201);
  const creds = `_:${key}`;

  t.test('push, inspect, pull back byte-identical', async (t) => {
    const img = await buildImage(join(tmp.dir, 'img'), sampleSpec());
    const push = await skopeo(['copy', '--dest-creds', creds, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/web:latest`]);
    t.equal(push.code, 0, push.stderr);
    const inspect = await skopeo(['inspect', '--creds', creds, '--tls-verify=false', `docker://${host}/myapp/web:latest`]);
    t.equal(inspect.code, 0, inspect.stderr);
    const info = JSON.parse(inspect.stdout);
    t.equal(info.Digest, img.manifestDigest, 'manifest digest is the pushed bytes');
    t.same(info.Layers, img.layers.map((l) => l.digest));
    t.equal(info.Architecture, 'amd64');
    const back = join(tmp.dir, 'back');
    const pull = await skopeo(['copy', '--src-creds', creds, '--src-tls-verify=false', `docker://${host}/myapp/web:latest`, `dir:${back}`]);
    t.equal(pull.code, 0, pull.stderr);
    for (const f of readdirSync(img.dir)) {
      t.ok(readFileSync(join(back, f)).equals(readFileSync(join(img.dir, f))), `${f} byte-identical`);
    }
  });

  t.test('e-mail and API key login (CI/CD form), tags list, delete', async (t) => {
    const img = await buildImage(join(tmp.dir, 'img2'), sampleSpec());
    const emailCreds = `${server.email}:${key}`;
    for (const tag of ['v1', 'v2']) {
      const r = await skopeo(['copy', '--dest-creds', emailCreds, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/worker:${tag}`]);
      t.equal(r.code, 0, r.stderr);
    }
    const tags = await skopeo(['list-tags', '--creds', emailCreds, '--tls-verify=false', `docker://${host}/myapp/worker`]);
    t.equal(tags.code, 0, tags.stderr);
    t.same(JSON.parse(tags.stdout).Tags, ['v1', 'v2']);
    const del = await skopeo(['delete', '--creds', emailCreds, '--tls-verify=false', `docker://${host}/myapp/worker@${img.manifestDigest}`]);
    t.equal(del.code, 0, del.stderr);
    const gone = await http('GET', `${server.urls.registry}/v2/myapp/worker/manifests/v1`, { headers: basic('_', key) });
    t.equal(gone.status, 404, 'tags of a deleted manifest are gone');
    const after = await skopeo(['inspect', '--creds', emailCreds, '--tls-verify=false', `docker://${host}/myapp/worker:v2`]);
    t.not(after.code, 0, 'inspect after delete fails');
  });

  t.test('wrong credentials and foreign apps are refused', async (t) => {
    const img = await buildImage(join(tmp.dir, 'img3'), sampleSpec());
    const bad = await skopeo(['copy', '--dest-creds', '_:SVC-not-a-token', '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/web:bad`]);
    t.not(bad.code, 0);
    t.match(bad.stderr, /unauthorized|authentication required|invalid username or password/i);
    const noApp = await skopeo(['copy', '--dest-creds', creds, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/nosuchapp/web:latest`]);
    t.not(noApp.code, 0);
    t.match(noApp.stderr, /denied: requested access to the resource is denied: app \\?"nosuchapp\\?" does not exist/);
  });

  t.test('arm64 image is refused with "unsupported architecture"', async (t) => {
    const img = await buildImage(join(tmp.dir, 'arm'), sampleSpec({ architecture: 'arm64' }));
    const r = await skopeo(['copy', '--dest-creds', creds, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/web:arm`]);
    t.not(r.code, 0);
    t.match(r.stderr, /unsupported architecture \\?"arm64\\?"/);
    const m = await http('GET', `${server.urls.registry}/v2/myapp/web/manifests/arm`, { headers: basic('_', key) });
    t.equal(m.status, 404, 'nothing was tagged');
  });
});
