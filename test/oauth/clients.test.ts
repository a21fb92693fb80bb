/**
 * OAuth clients on the API host (docs/rules.md Resources 1; docs/platform-conventions.md 2.4): create with a secret
 * shown once, redirect URI rules, public info without the secret, owner-only changes, rotation
 * (the old secret fails at once), deletion revoking every authorization issued to the client.
 */
import t from 'tap';
import { api, Browser, createAccount, walkAuthorization } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { http } from '../helpers/http.js';
import { clients } from '../../engine/oauth/keyspaces.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;

async function exchange(code: string, secret: string) {
  return http('POST', `${ts.auth}/oauth/token`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_secret: secret }).toString(),
  });
}

t.test('create: UUID id, secret once, trusted false', async (t) => {
  const r = await api(ts, 'POST', '/oauth/clients', key, { name: 'My app', redirect_uri: 'https://myapp.example/oauth/callback' });
  t.equal(r.status, 201);
  t.match(r.json.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.match(r.json.secret, /^[A-Za-z0-9_-]{43}$/);
  t.equal(r.json.name, 'My app');
  t.equal(r.json.redirect_uri, 'https://myapp.example/oauth/callback');
  t.equal(r.json.trusted, false);
  const info = await http('GET', `${ts.api}/oauth/clients/${r.json.id}`);
  t.equal(info.status, 200, 'info needs no credentials');
  t.notOk('secret' in info.json, 'and shows no secret');
  t.equal(info.json.name, 'My app');
  const owned = await api(ts, 'GET', `/oauth/clients/${r.json.id}`, key);
  t.notOk('secret' in owned.json, 'not even to its owner');
  const list = await api(ts, 'GET', '/oauth/clients', key);
  t.ok(list.json.some((c: { id: string }) => c.id === r.json.id));
  t.notOk(list.text.includes(r.json.secret));
  const raw = await ts.server.store.metadata.get(clients, r.json.id);
  t.notOk(JSON.stringify(raw).includes(r.json.secret), 'stored only as a hash');
});

t.test('redirect URI rules: https, or http on loopback only; refusals create nothing', async (t) => {
  const before = (await api(ts, 'GET', '/oauth/clients', key)).json.length;
  for (const ok of ['https://a.example/cb', 'http://localhost:8080/cb', 'http://127.0.0.1/cb', 'http://127.5.6.7:9/x?y=1', 'http://[::1]:3000/cb']) {
    t.equal((await api(ts, 'POST', '/oauth/clients', key, { name: 'ok', redirect_uri: ok })).status, 201, ok);
  }
  const bad: Array<[unknown, RegExp]> = [
    [{ name: 'x', redirect_uri: 'http://a.example/cb' }, /https, or http on a loopback address/],
    [{ name: 'x', redirect_uri: 'http://10.0.0.1/cb' }, /loopback/],
    [{ name: 'x', redirect_uri: 'http://localhost.evil.example/cb' }, /loopback/],
    [{ name: 'x', redirect_uri: 'myapp://cb' }, /https, or http/],
    [{ name: 'x', redirect_uri: 'https://a.example/cb#frag' }, /fragment/],
    [{ name: 'x', redirect_uri: 'https://user:pw@a.example/cb' }, /user information/],
    [{ name: 'x', redirect_uri: '/relative' }, /not an absolute URL/],
    [{ name: 'x', redirect_uri: 'https://a.example/' + 'x'.repeat(2000) }, /longer than 2000/],
    [{ name: 'x' }, /redirect_uri is required/],
    [{ redirect_uri: 'https://a.example/cb' }, /name is required/],
    [{ name: '   ', redirect_uri: 'https://a.example/cb' }, /name is required/],
    [{ name: 'x', redirect_uri: 'https://a.example/cb', trusted: 'yes' }, /.+/],
  ];
  for (const [body, message] of bad) {
    const r = await api(ts, 'POST', '/oauth/clients', key, body);
    t.ok(r.status === 422 || r.status === 403, `${JSON.stringify(body).slice(0, 70)} → ${r.status}`);
    t.match(r.json.message, message);
  }
  t.equal((await api(ts, 'GET', '/oauth/clients', key)).json.length, before + 5, 'only the valid ones were created');
});

t.test('update and rotate: owner only; the old secret fails at once', async (t) => {
  const c = (await api(ts, 'POST', '/oauth/clients', key, { name: 'Rotating', redirect_uri: 'http://127.0.0.1:9/cb' })).json;
  const other = await createAccount(ts, 'client-other@example.com');
  t.equal((await api(ts, 'PATCH', `/oauth/clients/${c.id}`, other.apiKey, { name: 'stolen' })).status, 404, "someone else's client");
  t.equal((await api(ts, 'POST', `/oauth/clients/${c.id}/actions/rotate-credentials`, other.apiKey)).status, 404);
  t.equal((await api(ts, 'DELETE', `/oauth/clients/${c.id}`, other.apiKey)).status, 404);
  const patched = await api(ts, 'PATCH', `/oauth/clients/${c.id}`, key, { name: 'Renamed' });
  t.equal(patched.status, 200);
  t.equal(patched.json.name, 'Renamed');
  t.equal(patched.json.redirect_uri, 'http://127.0.0.1:9/cb');
  t.equal((await api(ts, 'PATCH', `/oauth/clients/${c.id}`, key, { redirect_uri: 'http://evil.example/' })).status, 422);
  t.equal((await http('GET', `${ts.api}/oauth/clients/${c.id}`)).json.redirect_uri, 'http://127.0.0.1:9/cb', 'a refused PATCH changes nothing');

  const url = `${ts.auth}/oauth/authorize?client_id=${c.id}&response_type=code&scope=identity`;
  const code1 = (await walkAuthorization(new Browser(ts.auth), url, ts.operator, ts.clock)).searchParams.get('code')!;
  const rotated = await api(ts, 'POST', `/oauth/clients/${c.id}/actions/rotate-credentials`, key);
  t.equal(rotated.status, 200);
  t.match(rotated.json.secret, /^[A-Za-z0-9_-]{43}$/);
  t.not(rotated.json.secret, c.secret);
  const old = await exchange(code1, c.secret);
  t.equal(old.status, 401);
  t.equal(old.json.error, 'invalid_client', 'the old secret fails at once');
  t.equal((await exchange(code1, rotated.json.secret)).status, 200, 'the new one works');
});

t.test('delete: 200 with the client, and every authorization issued to it is revoked', async (t) => {
  const c = (await api(ts, 'POST', '/oauth/clients', key, { name: 'Doomed', redirect_uri: 'http://127.0.0.1:9/cb' })).json;
  const url = `${ts.auth}/oauth/authorize?client_id=${c.id}&response_type=code&scope=read`;
  const b = new Browser(ts.auth);
  const tok = (await exchange((await walkAuthorization(b, url, ts.operator, ts.clock)).searchParams.get('code')!, c.secret)).json;
  const pending = (await walkAuthorization(b, url, ts.operator, ts.clock)).searchParams.get('code')!;
  t.equal((await api(ts, 'GET', '/apps', tok.access_token)).status, 200);
  const del = await api(ts, 'DELETE', `/oauth/clients/${c.id}`, key);
  t.equal(del.status, 200);
  t.equal(del.json.id, c.id);
  t.notOk('secret' in del.json);
  t.equal((await api(ts, 'GET', '/apps', tok.access_token)).status, 401, 'access token revoked');
  const refresh = await http('POST', `${ts.auth}/oauth/token`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tok.refresh_token, client_secret: c.secret }).toString(),
  });
  t.equal(refresh.json.error, 'invalid_grant', 'refresh token revoked');
  t.equal((await exchange(pending, c.secret)).json.error, 'invalid_grant', 'pending codes fail');
  t.equal((await http('GET', `${ts.api}/oauth/clients/${c.id}`)).status, 404);
  t.equal((await new Browser(ts.auth).get(`/oauth/authorize?client_id=${c.id}&response_type=code&scope=read`)).status, 400, 'unknown client page');
});
