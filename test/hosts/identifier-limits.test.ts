/**
 * Every identifier a request names has a maximum length (engine/identifiers.ts, docs/reference.md
 * "Identifier limits"). Longer ones are refused with a 4xx whose message names the limit, before
 * the store is touched: over-long keys used to reach LMDB and answer 500 ("String does not fit in
 * target buffer"). Through the real HTTP interface, against a spawned server; nothing changes.
 */
import t from 'tap';
import { tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, bearer, createApp, errCode, errMessage, http } from '../helpers/http.js';
import { snapshot } from '../helpers/snapshot.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
const { registry: reg, api } = server.urls;
const V3 = { accept: 'application/vnd.slipway+json; version=3', ...bearer(key) };
if ((await createApp(api, key, 'limits')).status !== 201) throw new Error('cannot create the app');
const long = (n: number) => 'a'.repeat(n);
const before = await snapshot(server.urls, key);

t.test('registry host', async (t) => {
  for (const n of [8_000, 10_000]) {
    const r = await http('GET', `${reg}/v2/_catalog?last=${long(n)}`, { headers: basic('_', key) });
    t.equal(r.status, 400, `catalog last=${n} chars`);
    t.equal(errCode(r), 'PAGINATION_NUMBER_INVALID');
    t.match(errMessage(r), /repository name too long: \d+ characters, at most 255/);
  }
  const tags = await http('GET', `${reg}/v2/limits/web/tags/list?last=${long(10_000)}`, { headers: basic('_', key) });
  t.equal(tags.status, 404, 'unknown repository first');
  const basicUser = await http('GET', `${reg}/v2/`, { headers: basic(long(10_000) + '@example.com', key) });
  t.equal(basicUser.status, 401, 'Basic auth with a 10 KB user: a credentials challenge');
  t.match(errMessage(basicUser), /e-mail address too long: 10012 characters, at most 254/);
  const name = await http('GET', `${reg}/v2/limits/${long(300)}/tags/list`, { headers: basic('_', key) });
  t.equal(name.status, 400);
  t.equal(errCode(name), 'NAME_INVALID');
  t.match(errMessage(name), /at most 255/);
  const digest = await http('GET', `${reg}/v2/limits/web/blobs/sha512:${long(10_000)}`, { headers: basic('_', key) });
  t.equal(digest.status, 400);
  t.equal(errCode(digest), 'DIGEST_INVALID');
  t.match(errMessage(digest), /digest too long: \d+ characters, at most 256/);
});

t.test('API host', async (t) => {
  const cases: Array<[string, RegExp]> = [
    [`/apps/${long(10_000)}`, /app id or name too long: 10000 characters, at most 36/],
    [`/apps/${long(10_000)}/formation`, /app id or name too long/],
    [`/apps/limits/formation/${long(10_000)}`, /process type too long: 10000 characters, at most 128/],
    [`/oauth/authorizations/${long(10_000)}`, /authorization id too long: 10000 characters, at most 36/],
    [`/teams/${long(10_000)}`, /team id or name too long: 10000 characters, at most 36/],
    [`/teams/${long(10_000)}/apps`, /team id or name too long/],
  ];
  for (const [path, message] of cases) {
    const r = await http('GET', api + path, { headers: V3 });
    t.equal(r.status, 422, path.slice(0, 40));
    t.equal(r.json?.id, 'invalid_params');
    t.match(r.json?.message, message);
  }
  const client = await http('GET', `${api}/oauth/clients/${long(10_000)}`, { headers: V3 });
  t.equal(client.status, 404, 'client ids are UUIDs: anything else is unknown');
  const member = await http('PUT', `${api}/teams/${long(40)}/members`, { headers: { ...V3, 'content-type': 'application/json' }, body: JSON.stringify({ email: long(10_000), role: 'member' }) });
  t.equal(member.status, 422);
});

t.test('auth host: sign-in with a 10 KB e-mail address', async (t) => {
  const page = await http('GET', `${server.urls.auth}/login`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
  const cookie = (page.headers['set-cookie'] ?? '').split(';')[0]!;
  const r = await http('POST', `${server.urls.auth}/login`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams({ csrf, email: long(10_000), password: 'x', code: '000000' }).toString(),
  });
  t.ok(r.status >= 400 && r.status < 500, `4xx, got ${r.status}`);
});

t.test('nothing changed', async (t) => {
  t.equal(await snapshot(server.urls, key), before);
});
