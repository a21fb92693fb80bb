/**
 * What the platform's CLI relies on, checked through the HTTP API (the CLI itself runs in
 * test/interop/platform-cli.test.ts): compatible Accept vendors, config-var releases (wording,
 * no-op, bad input, concurrency), dynos derived from the formation, empty-by-design resources,
 * web_url, registry login with an empty user name, and the settings' validation.
 */
import t from 'tap';
import { api } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, http } from '../helpers/http.js';
import { loadConfig } from '../../server/config.js';
import { webUrlOf } from '../../server/api/web-url.js';
import { key as storeKey } from '../../engine/store.js';
import { formations } from '../../engine/platform/keyspaces.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;
const created = await api(ts, 'POST', '/apps', key, { name: 'compat-app' });
if (created.status !== 201) throw new Error(created.text);

t.test('Accept: the CLI\'s vendor and variants are served; other versions and vendors are not', async (t) => {
  for (const v of ['3', '3.sdk', '3.docker-releases', '3.container-releases']) {
    const r = await api(ts, 'GET', '/account', key, undefined, { accept: `application/vnd.heroku+json; version=${v}` });
    t.equal(r.status, 200, `heroku ${v}`);
  }
  const v2 = await api(ts, 'GET', '/account', key, undefined, { accept: 'application/vnd.heroku+json; version=2' });
  t.equal(v2.status, 406);
  t.equal(v2.json.id, 'not_acceptable');
  t.equal((await api(ts, 'GET', '/account', key, undefined, { accept: 'application/vnd.other+json; version=3' })).status, 406);
  const strict = await startInProcess({ env: { SLIPWAY_ACCEPT_VENDORS: 'none' } });
  t.teardown(() => strict.stop());
  t.equal((await api(strict, 'GET', '/account', strict.operator.apiKey, undefined, { accept: 'application/vnd.heroku+json; version=3' })).status, 406, 'none: only SLIPWAY_VENDOR');
  t.equal((await api(strict, 'GET', '/account', strict.operator.apiKey)).status, 200);
});

t.test('settings are validated at start', async (t) => {
  t.throws(() => loadConfig({ SLIPWAY_ACCEPT_VENDORS: 'heroku,Bad Name' }), /SLIPWAY_ACCEPT_VENDORS: expected vendor names, .*got "heroku,Bad Name" \("Bad Name" is not one\)/);
  t.same(loadConfig({ SLIPWAY_ACCEPT_VENDORS: 'heroku, acme' }).acceptVendors, ['heroku', 'acme']);
  t.same(loadConfig({}).acceptVendors, ['heroku']);
  t.throws(() => loadConfig({ SLIPWAY_APP_URL_TEMPLATE: 'https://example.com/' }), /SLIPWAY_APP_URL_TEMPLATE: expected an http\(s\) URL template containing \{app\}, e.g. https:\/\/\{app\}.example.com\/, got "https:\/\/example.com\/"/);
  t.equal(loadConfig({ SLIPWAY_APP_URL_TEMPLATE: 'https://{app}.apps.example.com/' }).appUrlTemplate, 'https://{app}.apps.example.com/');
});

t.test('web_url', async (t) => {
  t.equal(webUrlOf(undefined, 'https://api.example.com')('web1'), 'https://web1.example.com/');
  t.equal(webUrlOf(undefined, 'http://127.0.0.1:5001')('web1'), 'http://web1.localhost/');
  t.equal(webUrlOf(undefined, 'https://paas.example.org:8443')('web1'), 'https://web1.paas.example.org/');
  t.equal(webUrlOf('https://{app}.run.example/', 'https://api.example.com')('web1'), 'https://web1.run.example/');
  t.equal((await api(ts, 'GET', '/apps/compat-app', key)).json.web_url, 'http://compat-app.localhost/');
  const custom = await startInProcess({ env: { SLIPWAY_APP_URL_TEMPLATE: 'https://{app}.run.example/' } });
  t.teardown(() => custom.stop());
  t.equal((await api(custom, 'POST', '/apps', custom.operator.apiKey, { name: 'tmpl-app' })).json.web_url, 'https://tmpl-app.run.example/');
});

t.test('config-var changes are releases', async (t) => {
  const set = await api(ts, 'PATCH', '/apps/compat-app/config-vars', key, { FOO: 'a', BAR: 'b' });
  t.same(set.json, { FOO: 'a', BAR: 'b' });
  const mixed = await api(ts, 'PATCH', '/apps/compat-app/config-vars', key, { BAZ: 'c', FOO: null });
  t.equal(mixed.status, 200);
  const list = (await api(ts, 'GET', '/apps/compat-app/releases', key, undefined, { range: 'version ..; max=10, order=desc' })).json;
  t.same(list.map((r: { version: number; description: string }) => [r.version, r.description]), [
    [2, 'Set BAZ and remove FOO config vars'],
    [1, 'Set FOO, BAR config vars'],
  ], 'newest first, described by the keys changed');
  t.same((await api(ts, 'GET', '/apps/compat-app/releases/1/config-vars', key)).json, { FOO: 'a', BAR: 'b' }, 'a release keeps its config vars');
  const same = await api(ts, 'PATCH', '/apps/compat-app/config-vars', key, { BAR: 'b' });
  t.equal(same.status, 200);
  t.equal((await api(ts, 'GET', '/apps/compat-app/releases', key)).json.length, 2, 'a change that changes nothing makes no release');
  const bad = await api(ts, 'PATCH', '/apps/compat-app/config-vars', key, { OK: 'x', '1BAD': 'y' });
  t.equal(bad.status, 422);
  t.equal(bad.json.id, 'invalid_params');
  t.same((await api(ts, 'GET', '/apps/compat-app/config-vars', key)).json, { BAR: 'b', BAZ: 'c' }, 'bad input changes nothing');
  t.equal((await api(ts, 'GET', '/apps/compat-app/releases', key)).json.length, 2, '…and makes no release');
  const removed = await api(ts, 'PATCH', '/apps/compat-app/config-vars', key, { BAZ: null });
  t.equal(removed.status, 200);
  t.equal((await api(ts, 'GET', '/apps/compat-app/releases/3', key)).json.description, 'Remove BAZ config vars');
});

t.test('race: concurrent config-var changes each make exactly one release, numbered without gaps', async (t) => {
  await api(ts, 'POST', '/apps', key, { name: 'race-app' });
  for (let round = 0; round < 5; round++) {
    const before = (await api(ts, 'GET', '/apps/race-app/releases', key, undefined, { range: 'version ..; max=1000' })).json.length;
    const n = 12;
    const results = await Promise.all(Array.from({ length: n }, async (_, i) => {
      await new Promise((r) => setTimeout(r, Math.random() * 5)); // deliberate: random interleaving (the race)
      return api(ts, 'PATCH', '/apps/race-app/config-vars', key, { [`K${round}_${i}`]: String(i) });
    }));
    t.ok(results.every((r) => r.status === 200), `round ${round}: every change accepted`);
    const releases = (await api(ts, 'GET', '/apps/race-app/releases', key, undefined, { range: 'version ..; max=1000' })).json;
    t.equal(releases.length, before + n, `round ${round}: one release per change`);
    t.same(releases.map((r: { version: number }) => r.version), Array.from({ length: before + n }, (_, i) => i + 1), 'versions 1..N, no gap, no duplicate');
    const newest = (await api(ts, 'GET', `/apps/race-app/releases/${before + n}/config-vars`, key)).json;
    t.same(newest, (await api(ts, 'GET', '/apps/race-app/config-vars', key)).json, 'the newest release holds the current config vars');
    t.equal(Object.keys(newest).length, (round + 1) * n, 'no change lost');
  }
});

t.test('dynos are derived from the formation and say that nothing runs', async (t) => {
  t.same((await api(ts, 'GET', '/apps/compat-app/dynos', key)).json, [], 'no formation, no dynos');
  const { store } = ts.server;
  const app = (await api(ts, 'GET', '/apps/compat-app', key)).json.id;
  const at = ts.clock.now();
  await store.metadata.transact((tx) => tx.put(formations, storeKey(app, 'web'), { id: 'f-web', appId: app, type: 'web', command: 'run', quantity: 2, size: 'standard-1X', image: null, createdAt: at, updatedAt: at }));
  const list = await api(ts, 'GET', '/apps/compat-app/dynos', key);
  t.same(list.json.map((d: { name: string; state: string }) => [d.name, d.state]), [['web.1', 'not running'], ['web.2', 'not running']]);
  t.match(list.headers['warning-message'], /runs no dynos/);
  t.equal(list.json[0].release.version, 3, 'tied to the newest release');
  for (const name of ['web.3', 'web.0', 'worker.1', 'web']) {
    const r = await api(ts, 'GET', `/apps/compat-app/dynos/${name}`, key);
    t.equal(r.status, 404, name);
    t.equal(r.json.resource, 'dyno');
  }
  ts.clock.advance(5000);
  t.equal((await api(ts, 'DELETE', '/apps/compat-app/dynos/web.2', key)).status, 202);
  const restarted = (await api(ts, 'GET', '/apps/compat-app/dynos/web.1', key)).json;
  t.equal(Date.parse(restarted.updated_at), at + 5000, 'restart shows in updated_at');
  const unknown = await api(ts, 'DELETE', '/apps/compat-app/formations/nope', key);
  t.equal(unknown.status, 404);
  t.equal((await api(ts, 'POST', '/apps/compat-app/dynos/web.9/actions/stop', key)).status, 404);
});

t.test('empty or absent by design', async (t) => {
  t.same((await api(ts, 'GET', '/apps/compat-app/addons', key)).json, []);
  t.same((await api(ts, 'GET', '/addons', key)).json, []);
  t.same((await api(ts, 'GET', '/account/features', key)).json, []);
  const pc = await api(ts, 'GET', '/apps/compat-app/pipeline-couplings', key);
  t.equal(pc.status, 404);
  t.same([pc.json.id, pc.json.resource], ['not_found', 'pipeline-coupling']);
  t.equal((await api(ts, 'GET', '/apps/nope-app/pipeline-couplings', key)).json.resource, 'app', 'an unknown app is named as such');
  const collab = (await api(ts, 'GET', '/apps/compat-app/collaborators', key)).json;
  t.same(collab.map((c: { user: { email: string }; role: string }) => [c.user.email, c.role]), [[ts.operator.email, 'owner']]);
  const mine = (await api(ts, 'GET', '/users/~/apps', key)).json.map((a: { name: string }) => a.name);
  t.ok(mine.includes('compat-app'));
  t.equal((await api(ts, 'GET', '/users/someone-else@example.com/apps', key)).status, 404, 'other users\' lists are not shown');
});

t.test('registry: Basic with an empty user name and a token, like "_"', async (t) => {
  const registry = ts.server.urls.registry;
  const empty = await http('GET', `${registry}/v2/`, { headers: basic('', key) });
  t.equal(empty.status, 200);
  const wrong = await http('GET', `${registry}/v2/`, { headers: basic('', 'SVC-nope') });
  t.equal(wrong.status, 401);
});
