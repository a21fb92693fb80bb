/**
 * App settings through the API: config vars (set, unset, refusals change nothing), labs features
 * (runtime-new-layer-extract only on the shared runtime), owner updates (back to a curated
 * stack). Scope enforcement of these routes is in test/api/authorization-matrix.test.ts.
 */
import t from 'tap';
import { api } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;
for (const [name, space] of [['settings-app', null], ['space-app', 'secure-space']] as const) {
  const r = await api(ts, 'POST', '/apps', key, { name, space });
  if (r.status !== 201) throw new Error(r.text);
}

t.test('config vars', async (t) => {
  t.same((await api(ts, 'GET', '/apps/settings-app/config-vars', key)).json, {});
  const set = await api(ts, 'PATCH', '/apps/settings-app/config-vars', key, { DATABASE_URL: 'postgres://u:p@db/x', MODE: 'prod' });
  t.equal(set.status, 200);
  t.same(set.json, { DATABASE_URL: 'postgres://u:p@db/x', MODE: 'prod' });
  t.same((await api(ts, 'PATCH', '/apps/settings-app/config-vars', key, { MODE: null })).json, { DATABASE_URL: 'postgres://u:p@db/x' }, 'null unsets');
  for (const bad of [{ '1BAD': 'x' }, { 'WITH-DASH': 'x' }, { NUM: 3 }, { BIG: 'x'.repeat(40_000) }]) {
    const r = await api(ts, 'PATCH', '/apps/settings-app/config-vars', key, bad);
    t.equal(r.status, 422, JSON.stringify(bad).slice(0, 30));
    t.equal(r.json.id, 'invalid_params');
  }
  t.same((await api(ts, 'GET', '/apps/settings-app/config-vars', key)).json, { DATABASE_URL: 'postgres://u:p@db/x' }, 'refusals changed nothing');
});

t.test('labs features', async (t) => {
  const list = await api(ts, 'GET', '/apps/settings-app/features', key);
  t.same(list.json.map((f: { name: string; enabled: boolean }) => [f.name, f.enabled]), [['runtime-new-layer-extract', false]]);
  const on = await api(ts, 'PATCH', '/apps/settings-app/features/runtime-new-layer-extract', key, { enabled: true });
  t.equal(on.status, 200);
  t.equal(on.json.enabled, true);
  t.equal((await api(ts, 'GET', '/apps/settings-app/features/runtime-new-layer-extract', key)).json.enabled, true);
  const space = await api(ts, 'PATCH', '/apps/space-app/features/runtime-new-layer-extract', key, { enabled: true });
  t.equal(space.status, 422);
  t.match(space.json.message, /shared runtime only/);
  t.equal((await api(ts, 'GET', '/apps/space-app/features/runtime-new-layer-extract', key)).json.enabled, false, 'refusal changed nothing');
  t.equal((await api(ts, 'GET', '/apps/settings-app/features/no-such-feature', key)).status, 404);
  t.equal((await api(ts, 'PATCH', '/apps/settings-app/features/runtime-new-layer-extract', key, { enabled: 'yes' })).status, 422);
});

t.test('owner updates', async (t) => {
  const r = await api(ts, 'PATCH', '/apps/settings-app', key, { build_stack: 'container' });
  t.equal(r.json.stack.name, 'container');
  const back = await api(ts, 'PATCH', '/apps/settings-app', key, { build_stack: { name: 'heroku-22' } });
  t.equal(back.status, 200);
  t.equal(back.json.stack.name, 'heroku-22', 'the owner switches back to a curated stack');
  t.equal((await api(ts, 'PATCH', '/apps/settings-app', key, { build_stack: 'windows-2019' })).status, 422);
  const bad = await api(ts, 'PATCH', '/apps/settings-app', key, { name: 'Renamed_App', maintenance: true });
  t.equal(bad.status, 422, 'a malformed name is refused (a valid one renames: test/platform/app-rename.test.ts)');
  t.equal((await api(ts, 'GET', '/apps/settings-app', key)).json.maintenance, false, 'and the rest of the body changes nothing');
  t.equal((await api(ts, 'PATCH', '/apps/settings-app', key, { maintenance: true })).json.maintenance, true);
  t.equal((await api(ts, 'GET', '/apps/space-app', key)).json.space.name, 'secure-space');
  t.equal((await api(ts, 'POST', '/apps', key, { name: 'bad-space', space: 'Not A Space' })).status, 422);
});
