/**
 * App rename through the real interfaces of a spawned `slipway serve` (docs/apps.md "Renaming an
 * app"): the stock `heroku apps:rename` and raw PATCH /apps/{app} {name}; an image pushed with
 * skopeo under the old name is pulled under the new one (same digest), the old name answers as
 * any name no app holds, the catalog and tag lists follow, a registry token scoped to the old
 * repository reaches nothing; releases (and a rollback, which re-checks the released image is
 * stored), formation and config vars stay with the app; an `api:app` update event carries the
 * old name in previous_data; the old name is free for a new app, which sees none of the renamed
 * app's images; bad names (422) and taken names (409) change nothing.
 */
import t from 'tap';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { basic, bearer, errCode, http } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { startCliServer } from '../helpers/platform-cli.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';

const CONTAINER = 'application/vnd.slipway+json; version=3.container-releases';
const { server, key, api, ok, dataDir } = await startCliServer(t);
const host = new URL(server.urls.registry).host;
const registry = server.urls.registry;
const auth = basic('_', key);
const OLD = `ren-old-${process.pid % 100000}`;
const NEW = `ren-new-${process.pid % 100000}`;
const TAKEN = `ren-taken-${process.pid % 100000}`;
for (const name of [OLD, TAKEN]) {
  const made = await api('POST', '/apps', { name });
  if (made.status !== 201) throw new Error(`creating app ${name}: ${made.status} ${made.text}`);
}
const appId: string = (await api('GET', `/apps/${OLD}`)).json.id;

t.test('bad and taken names are refused as at create, and change nothing', async (t) => {
  const bad = await api('PATCH', `/apps/${OLD}`, { name: 'Bad_Name' });
  t.equal(bad.status, 422, 'a malformed name: 422');
  t.equal(bad.json.id, 'invalid_params');
  const atCreate = await api('POST', '/apps', { name: 'Bad_Name' });
  t.equal(bad.json.message, atCreate.json.message, 'with the message create gives');
  const taken = await api('PATCH', `/apps/${OLD}`, { name: TAKEN });
  t.equal(taken.status, 409, 'a taken name: 409');
  t.equal(taken.json.id, 'conflict');
  t.match(taken.json.message, `Name ${TAKEN} is already taken`);
  const same = await api('PATCH', `/apps/${OLD}`, { name: OLD });
  t.equal(same.status, 200, 'the current name: 200, nothing to do');
  t.equal((await api('GET', `/apps/${OLD}`)).json.name, OLD, 'the app keeps its name');
});

t.test('skopeo push, release; heroku apps:rename; pull under the new name', { skip: skopeoSkip() }, async (t) => {
  const img = await buildImage(join(dataDir, 'test-images', 'ren'), sampleSpec({ config: { Cmd: ['./serve'] } }));
  const push = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/${OLD}/web:v1`]);
  t.equal(push.code, 0, `pushed: ${push.stderr}`);
  const released = await http('PATCH', `${server.urls.api}/apps/${OLD}/formation`, {
    headers: { ...bearer(key), accept: CONTAINER, 'content-type': 'application/json' },
    body: JSON.stringify({ updates: [{ type: 'web', docker_image: img.configDigest }] }),
  });
  t.equal(released.status, 200, `released: ${released.text}`);
  t.equal((await api('PATCH', `/apps/${OLD}/config-vars`, { GREETING: 'hello' })).status, 200, 'config var set (release v2)');
  const token = (await http('GET', `${registry}/token?scope=repository:${OLD}/web:pull`, { headers: auth })).json.token as string;
  t.ok(token, 'a registry token scoped to the old repository');

  const cli = await ok(t, ['apps:rename', NEW, '--app', OLD]);
  t.match(cli.all, `Renaming ${OLD} to ${NEW}`, 'the CLI reports the rename');

  const app = await api('GET', `/apps/${NEW}`);
  t.equal(app.status, 200, 'the app answers under its new name');
  t.equal(app.json.id, appId, 'same app id');
  t.equal((await api('GET', `/apps/${OLD}`)).status, 404, 'the old name: 404');

  const inspected = await skopeo(['inspect', '--creds', `_:${key}`, '--tls-verify=false', `docker://${host}/${NEW}/web:v1`]);
  t.equal(inspected.code, 0, `inspect under the new name: ${inspected.stderr}`);
  t.equal(JSON.parse(inspected.stdout).Digest, img.manifestDigest, 'the same manifest');
  const out = mkdtempSync(join(dataDir, 'pulled-'));
  const pull = await skopeo(['copy', '--src-creds', `_:${key}`, '--src-tls-verify=false', `docker://${host}/${NEW}/web:v1`, `dir:${out}`]);
  t.equal(pull.code, 0, `skopeo pulls it, every layer, under the new name: ${pull.stderr}`);
  const oldPull = await skopeo(['inspect', '--creds', `_:${key}`, '--tls-verify=false', `docker://${host}/${OLD}/web:v1`]);
  t.not(oldPull.code, 0, 'the old name no longer pulls');
  const oldManifest = await http('GET', `${registry}/v2/${OLD}/web/manifests/v1`, { headers: auth });
  t.equal(oldManifest.status, 403, 'the old repository answers as any repository of a name no app holds (403 DENIED: names are not disclosed)');
  t.equal(errCode(oldManifest), 'DENIED');

  const catalog = (await http('GET', `${registry}/v2/_catalog`, { headers: auth })).json.repositories as string[];
  t.ok(catalog.includes(`${NEW}/web`), 'the catalog lists the new repository');
  t.notOk(catalog.some((r) => r.startsWith(`${OLD}/`)), 'and none under the old name');
  t.same((await http('GET', `${registry}/v2/${NEW}/web/tags/list`, { headers: auth })).json.tags, ['v1'], 'the tags moved');
  for (const l of img.layers) {
    t.equal((await http('HEAD', `${registry}/v2/${NEW}/web/blobs/${l.digest}`, { headers: auth })).status, 200, `layer ${l.digest.slice(7, 19)} linked under the new name`);
  }
  t.equal((await http('GET', `${registry}/v2/${NEW}/web/manifests/v1`, { headers: bearer(token) })).status, 401, 'a token scoped to the old repository does not reach the new one');
  t.equal((await http('GET', `${registry}/v2/${OLD}/web/manifests/v1`, { headers: bearer(token) })).status, 403, 'nor anything under the old name');

  const releases = (await http('GET', `${server.urls.api}/apps/${NEW}/releases`, { headers: { ...bearer(key), accept: CONTAINER } })).json as Array<{ id: string; version: number; processes?: Record<string, { repository: string }> }>;
  t.same(releases.map((r) => r.version), [1, 2], 'the releases stay with the app');
  t.equal(releases[0]!.processes?.web?.repository, `${NEW}/web`, 'and name the repository the image now lives in');
  const formation = (await http('GET', `${server.urls.api}/apps/${NEW}/formation`, { headers: { ...bearer(key), accept: CONTAINER } })).json as Array<{ type: string; docker_image?: string }>;
  t.equal(formation.find((f) => f.type === 'web')?.docker_image, img.configDigest, 'the formation keeps its image');
  t.same((await api('GET', `/apps/${NEW}/config-vars`)).json, { GREETING: 'hello' }, 'the config vars stay');
  const rollback = await http('POST', `${server.urls.api}/apps/${NEW}/releases`, {
    headers: { ...bearer(key), accept: CONTAINER, 'content-type': 'application/json' }, body: JSON.stringify({ release: releases[0]!.id }),
  });
  t.equal(rollback.status, 201, `a rollback to the release of the image pushed under the old name works: ${rollback.text.slice(0, 200)}`);

  const events = (await api('GET', `/apps/${NEW}/webhook-events`)).json as Array<{ payload: { resource: string; action: string; data: { name: string }; previous_data: { name?: string } } }>;
  const renamed = events.find((e) => e.payload.resource === 'app' && e.payload.action === 'update' && e.payload.previous_data?.name === OLD);
  t.ok(renamed, 'an api:app update event with previous_data.name the old name');
  t.equal(renamed?.payload.data.name, NEW, 'and data.name the new one');

  t.test('the old name is free: a new app takes it and sees none of the renamed app\'s images', async (t) => {
    t.equal((await api('POST', '/apps', { name: OLD })).status, 201, 'created');
    t.equal((await http('GET', `${registry}/v2/${OLD}/web/manifests/v1`, { headers: auth })).status, 404, 'its repository holds no manifest');
    for (const l of img.layers) {
      t.equal((await http('HEAD', `${registry}/v2/${OLD}/web/blobs/${l.digest}`, { headers: auth })).status, 404, `nor the renamed app's layer ${l.digest.slice(7, 19)}`);
    }
    const mine = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/${OLD}/web:v1`]);
    t.equal(mine.code, 0, `it pushes its own images: ${mine.stderr}`);
    t.same((await http('GET', `${registry}/v2/${NEW}/web/tags/list`, { headers: auth })).json.tags, ['v1'], 'the renamed app keeps its tags');
  });
});
