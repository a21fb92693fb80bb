/**
 * From a pushed image to a running formation (docs/rules.md Endpoints 7, What the service does 6): push two process
 * types with skopeo, release both with one PATCH of the formation, check the release, the
 * formation commands, the stack and the warnings; release one type and see every type restarted;
 * foreign, unknown and malformed image ids, newer-generation apps and a missing Accept variant
 * are refused and change nothing.
 */
import t from 'tap';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { bearer, createApp, http, basic } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { pushBlob, putManifest } from '../helpers/registry.js';

const skip = skopeoSkip();

t.test('container releases', { skip }, async (t) => {
  const tmp = tempDir();
  const server = await startInProcess({ dataDir: tmp.dir });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const key = server.apiKey!;
  const api = server.urls.api;
  const host = new URL(server.urls.registry).host;
  const v3 = 'application/vnd.slipway+json; version=3';
  const containerAccept = `${v3}.container-releases`;
  const call = (method: string, path: string, body?: unknown, accept = v3) =>
    http(method, api + path, { headers: { ...bearer(key), accept, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  t.equal((await createApp(api, key, 'shipit')).status, 201);

  const web = await buildImage(join(tmp.dir, 'web'), sampleSpec({ config: { Cmd: ['node', 'server.js'], ExposedPorts: { '3000/tcp': {} } } }));
  const worker = await buildImage(join(tmp.dir, 'worker'), sampleSpec({ config: { Entrypoint: ['/usr/bin/worker', '--queue'], Cmd: ['default jobs'], WorkingDir: '/app', User: 'nobody' } }));
  for (const [img, type] of [[web, 'web'], [worker, 'worker']] as const) {
    const r = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/shipit/${type}:latest`]);
    t.equal(r.code, 0, r.stderr);
  }

  t.test('release two process types in one PATCH', async (t) => {
    const r = await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'web', docker_image: web.configDigest }, { type: 'worker', docker_image: worker.configDigest }] }, containerAccept);
    t.equal(r.status, 200, r.text);
    const byType = Object.fromEntries(r.json.map((f: { type: string }) => [f.type, f]));
    t.equal(byType.web.command, "/bin/sh -c 'node server.js'", 'CMD runs through /bin/sh -c');
    t.equal(byType.worker.command, "/usr/bin/worker --queue 'default jobs'", 'ENTRYPOINT runs as given, CMD as its arguments');
    t.equal(byType.web.quantity, 1);
    t.equal(byType.web.docker_image, web.configDigest);
    const app = await call('GET', '/apps/shipit');
    t.equal(app.json.stack.name, 'container', 'the stack is now the container stack');
    const releases = await call('GET', '/apps/shipit/releases');
    t.equal(releases.json.length, 1);
    const rel = releases.json[0];
    t.equal(rel.version, 1);
    t.equal(rel.current, true);
    t.same(rel.artifacts.map((a: { id: string }) => a.id).sort(), [web.configDigest, worker.configDigest].sort());
    t.equal(rel.processes.worker.working_dir, '/app');
    t.equal(rel.processes.web.working_dir, '/', 'WORKDIR defaults to /');
    t.match(rel.processes.web.warnings.join('\n'), /EXPOSE is not supported and is ignored/);
    t.match(rel.processes.worker.warnings.join('\n'), /USER nobody is not the user used at runtime/);
    t.same(rel.restarted.sort(), ['web', 'worker']);
  });

  t.test('releasing one type restarts all; others keep their image', async (t) => {
    const web2 = await buildImage(join(tmp.dir, 'web2'), sampleSpec({ config: { Cmd: ['node', 'v2.js'] } }));
    const r0 = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${web2.dir}`, `docker://${host}/shipit/web:v2`]);
    t.equal(r0.code, 0, r0.stderr);
    const r = await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'web', docker_image: web2.configDigest }] }, 'application/vnd.slipway+json; version=3.docker-releases');
    t.equal(r.status, 200, r.text);
    const rel = (await call('GET', '/apps/shipit/releases/2')).json;
    t.same(rel.restarted.sort(), ['web', 'worker'], 'every process type restarts');
    t.equal(rel.processes.worker.docker_image, worker.configDigest, 'worker keeps its image');
    t.equal(rel.processes.web.docker_image, web2.configDigest);
    t.equal((await call('GET', '/apps/shipit/formation/web')).json.command, "/bin/sh -c 'node v2.js'");
    const rb = await call('POST', '/apps/shipit/releases', { release: 1 });
    t.equal(rb.status, 201);
    t.equal(rb.json.version, 3);
    t.equal(rb.json.processes.web.docker_image, web.configDigest, 'rollback creates a new release with the old images');
    t.equal((await call('GET', '/apps/shipit/releases/1')).json.current, false);
    // An image deleted since (here by a manifest delete; retention does the same) cannot be rolled back to.
    const registryAuth = basic('_', key);
    t.equal((await http('DELETE', `${server.urls.registry}/v2/shipit/web/manifests/${web2.manifestDigest}`, { headers: registryAuth })).status, 202);
    const gone = await call('POST', '/apps/shipit/releases', { release: 2 });
    t.equal(gone.status, 422);
    t.match(gone.json.message, /no longer stored/);
    t.equal((await call('GET', '/apps/shipit/releases')).json.length, 3, 'no release was created');
  });

  t.test('release phase and an image pushed without a process type', async (t) => {
    const rel = await buildImage(join(tmp.dir, 'rel'), sampleSpec({ config: { Cmd: ['./migrate'] } }));
    const r0 = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${rel.dir}`, `docker://${host}/shipit/tools:latest`]);
    t.equal(r0.code, 0, r0.stderr);
    const r = await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'release', docker_image: rel.configDigest }] }, containerAccept);
    t.equal(r.status, 200, r.text);
    const latest = (await call('GET', '/apps/shipit/releases/4')).json;
    t.equal(latest.release_phase, true);
    t.equal(latest.processes.release.repository, 'shipit/tools', 'released by its id from another repository of the app');
    t.ok((await call('GET', '/apps/shipit/formation')).json.some((f: { type: string }) => f.type === 'release'), 'the release type is listed with the others');
  });

  t.test('a manifest digest is released as the image id it names, and the response says so', async (t) => {
    const r = await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'web', docker_image: web.manifestDigest }] }, containerAccept);
    t.equal(r.status, 200, r.text);
    t.equal(r.headers['warning-message'], `docker_image ${web.manifestDigest} (web) is a manifest digest; released its image id ${web.configDigest}`);
    t.equal(r.json.find((f: { type: string }) => f.type === 'web').docker_image, web.configDigest);
    const latest = (await call('GET', '/apps/shipit/releases')).json.at(-1);
    t.equal(latest.processes.web.docker_image, web.configDigest, 'the release records the image id');
    t.equal(latest.processes.web.manifest, web.manifestDigest);
    const byId = await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'web', docker_image: web.configDigest }] }, containerAccept);
    t.equal(byId.headers['warning-message'], undefined, 'an image id needs no word');
  });

  t.test('refusals change nothing', async (t) => {
    const before = (await call('GET', '/apps/shipit/releases')).json.length;
    const other = await createApp(api, key, 'elsewhere');
    t.equal(other.status, 201);
    const foreign = await buildImage(join(tmp.dir, 'foreign'), sampleSpec({ config: { Cmd: ['x'] } }));
    const target = { registry: server.urls.registry, auth: basic('_', key) };
    for (const b of [foreign.config, ...foreign.layers.map((l) => l.bytes)]) await pushBlob(target, 'elsewhere/web', b);
    t.equal((await putManifest(target, 'elsewhere/web', 'latest', foreign.manifest)).status, 201);
    const cases: Array<[string, unknown, string, number, RegExp]> = [
      ['foreign image', { updates: [{ type: 'web', docker_image: foreign.configDigest }] }, containerAccept, 422, /is neither the image id nor the manifest digest of an image pushed to app shipit/],
      ['foreign manifest', { updates: [{ type: 'web', docker_image: foreign.manifestDigest }] }, containerAccept, 422, /is neither the image id nor the manifest digest of an image pushed to app shipit/],
      ['unknown image', { updates: [{ type: 'web', docker_image: sha256('nothing') }] }, containerAccept, 422,
        new RegExp(`push it to ${host.replace(/\./g, '\\.')}/shipit/web first, then send its image id \\(\`docker inspect --format '\\{\\{\\.Id\\}\\}' ${host.replace(/\./g, '\\.')}/shipit/web\`\\) or the digest \`docker push\` printed`)],
      ['malformed id', { updates: [{ type: 'web', docker_image: 'latest' }] }, containerAccept, 422, /sha256:<64 hex characters>/],
      ['no variant', { updates: [{ type: 'web', docker_image: web.configDigest }] }, v3, 422, /version=3\.container-releases/],
      ['bad type', { updates: [{ type: 'Web!', docker_image: web.configDigest }] }, containerAccept, 422, /not a valid process type/],
      ['duplicate', { updates: [{ type: 'web', docker_image: web.configDigest }, { type: 'web', docker_image: web.configDigest }] }, containerAccept, 422, /named twice/],
      ['no updates', { updates: 'web' }, containerAccept, 422, /updates must be an array/],
    ];
    for (const [label, body, accept, status, message] of cases) {
      const r = await call('PATCH', '/apps/shipit/formation', body, accept);
      t.equal(r.status, status, label);
      t.equal(r.json?.id, 'invalid_params', label);
      t.match(r.json?.message, message, label);
    }
    t.equal((await call('GET', '/apps/shipit/releases')).json.length, before, 'no release was created');
  });

  t.test('newer-generation apps cannot use the registry', async (t) => {
    t.equal((await createApp(api, key, 'newgen', { generation: 'fir' })).status, 201);
    const img = await buildImage(join(tmp.dir, 'fir'), sampleSpec());
    const push = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/newgen/web:latest`]);
    t.not(push.code, 0);
    t.match(push.stderr, /fir-generation app; the container registry is available to cedar-generation apps only/);
    const r = await call('PATCH', '/apps/newgen/formation', { updates: [{ type: 'web', docker_image: web.configDigest }] }, containerAccept);
    t.equal(r.status, 422);
    t.match(r.json.message, /cedar-generation apps only/);
  });

  t.test('scale per type', async (t) => {
    const r = await call('PATCH', '/apps/shipit/formation/worker', { quantity: 3 });
    t.equal(r.status, 200);
    t.equal(r.json.quantity, 3);
    const batch = await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'web', quantity: 2 }] });
    t.equal(batch.json[0].quantity, 2);
    t.equal((await call('PATCH', '/apps/shipit/formation/worker', { quantity: -1 })).status, 422);
    t.equal((await call('GET', '/apps/shipit/formation/nope')).status, 404);
  });

  t.test('release and scale in one PATCH: one transaction', async (t) => {
    const count = async () => (await call('GET', '/apps/shipit/releases')).json.length as number;
    const before = await count();
    const bad = await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'web', docker_image: web.configDigest, quantity: 5000 }] }, containerAccept);
    t.equal(bad.status, 422, bad.text);
    t.equal(await count(), before, 'a refused scale item leaves no release behind');
    const r = await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'web', docker_image: web.configDigest, quantity: 4, size: 'standard-2X' }] }, containerAccept);
    t.equal(r.status, 200, r.text);
    const webEntry = r.json.find((f: { type: string }) => f.type === 'web');
    t.equal(webEntry.quantity, 4, 'the response shows the scaled formation');
    t.equal(webEntry.size, 'standard-2X');
    t.equal(await count(), before + 1, 'one release');
    t.equal((await call('GET', '/apps/shipit/formation/web')).json.quantity, 4);
  });

  t.test('docker_image null removes a process type (container:rm); a later release does not bring it back', async (t) => {
    const docker = 'application/vnd.heroku+json; version=3.docker-releases';
    const before = (await call('GET', '/apps/shipit/releases')).json.length;
    const r = await call('PATCH', '/apps/shipit/formation/worker', { docker_image: null }, docker);
    t.equal(r.status, 200, r.text);
    t.equal(r.json.type, 'worker');
    t.notOk((await call('GET', '/apps/shipit/formation')).json.some((f: { type: string }) => f.type === 'worker'), 'worker left the formation');
    const removed = (await call('GET', '/apps/shipit/releases')).json.at(-1);
    t.equal(removed.version, before + 1);
    t.equal(removed.description, 'Removed worker');
    t.notOk('worker' in removed.processes, 'the new release has no worker image');
    t.ok('web' in removed.processes, 'the others keep theirs');
    t.equal((await call('PATCH', '/apps/shipit/formation', { updates: [{ type: 'web', docker_image: web.configDigest }] }, containerAccept)).status, 200);
    t.notOk((await call('GET', '/apps/shipit/formation')).json.some((f: { type: string }) => f.type === 'worker'), 'releasing web does not bring worker back');
    const again = await call('PATCH', '/apps/shipit/formation/worker', { docker_image: null }, docker);
    t.equal(again.status, 404, 'a type the app no longer has');
  });
});
