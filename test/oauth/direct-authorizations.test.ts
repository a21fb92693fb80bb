/**
 * Direct authorizations on the API host (docs/rules.md Endpoints 4-5; docs/platform-conventions.md 2.3): create with the
 * reference's record shape, list and info without token values, PATCH, regenerate, revoke
 * (every token fails at once), Bearer only, legacy unprefixed tokens.
 */
import t from 'tap';
import { api, createAccount } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, http } from '../helpers/http.js';
import { subscribeEvent, type AuthorizationEvent } from '../../engine/events.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

t.test('create: 201 with the Authorization record and the token value once', async (t) => {
  const r = await api(ts, 'POST', '/oauth/authorizations', key, { description: 'deploy script', scope: ['read', 'identity'], expires_in: '2592000' });
  t.equal(r.status, 201);
  t.match(r.headers.etag, /^"[0-9a-f]{32}"$/);
  t.ok(Date.parse(r.headers['last-modified']!) > 0);
  t.match(r.headers['ratelimit-remaining'], /^\d+$/);
  const a = r.json;
  t.match(a.id, UUID);
  t.equal(a.description, 'deploy script');
  t.same(a.scope, ['identity', 'read']);
  t.match(a.access_token.id, UUID);
  t.match(a.access_token.token, /^SVC-[A-Za-z0-9_-]{61}$/);
  t.equal(a.access_token.expires_in, 2592000, 'expires_in as a numeric string');
  t.equal(a.refresh_token, null, 'direct authorizations have no refresh token');
  t.equal(a.grant, null);
  t.equal(a.client, null);
  t.same(a.user, { id: ts.server.bootstrap!.account.id, email: ts.operator.email, full_name: null });
  t.match(a.created_at, ISO);
  t.match(a.updated_at, ISO);
  t.same(Object.keys(a).sort(), ['access_token', 'client', 'created_at', 'description', 'grant', 'id', 'refresh_token', 'scope', 'session', 'updated_at', 'user']);
  const me = await api(ts, 'GET', '/account', a.access_token.token);
  t.equal(me.status, 200, 'the new token works');
  ts.clock.advance(2592000 * 1000);
  t.equal((await api(ts, 'GET', '/account', a.access_token.token)).status, 401, 'and expires when asked');
});

t.test('defaults: global scope, empty description, no expiry', async (t) => {
  const r = await api(ts, 'POST', '/oauth/authorizations', key, {});
  t.equal(r.status, 201);
  t.same(r.json.scope, ['global']);
  t.equal(r.json.description, '');
  t.equal(r.json.access_token.expires_in, null);
  const empty = await api(ts, 'POST', '/oauth/authorizations', key);
  t.equal(empty.status, 201, 'an empty body is {}');
  const int = await api(ts, 'POST', '/oauth/authorizations', key, { expires_in: 3600 });
  t.equal(int.json.access_token.expires_in, 3600, 'expires_in as an integer');
  ts.clock.advance(10 * 365 * 24 * 3600_000);
  t.equal((await api(ts, 'GET', '/apps', r.json.access_token.token)).status, 200, 'no expiry: still valid ten years on');
});

t.test('bad input: 422 with a clear message, nothing created', async (t) => {
  const before = (await api(ts, 'GET', '/oauth/authorizations', key)).json.length;
  const cases: Array<[unknown, RegExp]> = [
    [{ description: 42 }, /description must be a string/],
    [{ scope: 'global' }, /scope must be an array of strings/],
    [{ scope: ['global', 'root'] }, /Unknown scope "root"/],
    [{ scope: [] }, /At least one scope is required/],
    [{ expires_in: 0 }, /expires_in must be a whole number/],
    [{ expires_in: -5 }, /expires_in must be a whole number/],
    [{ expires_in: 1.5 }, /expires_in must be a whole number/],
    [{ expires_in: '12abc' }, /expires_in must be a whole number/],
    [{ expires_in: 10 ** 12 }, /expires_in must be a whole number/],
    [{ description: 'x'.repeat(1001) }, /longer than 1000/],
  ];
  for (const [body, message] of cases) {
    const r = await api(ts, 'POST', '/oauth/authorizations', key, body);
    t.equal(r.status, 422, JSON.stringify(body).slice(0, 60));
    t.equal(r.json.id, 'invalid_params');
    t.match(r.json.message, message);
  }
  for (const raw of ['{"description":', '[]', '"text"', 'null']) {
    const r = await api(ts, 'POST', '/oauth/authorizations', key, raw);
    t.equal(r.status, 400, `body ${raw}`);
    t.equal(r.json.id, 'bad_request');
  }
  t.equal((await api(ts, 'GET', '/oauth/authorizations', key)).json.length, before, 'nothing was created');
});

t.test('Basic username/password (or any Basic) is refused: Bearer only', async (t) => {
  const before = (await api(ts, 'GET', '/oauth/authorizations', key)).json.length;
  for (const creds of [basic(ts.operator.email, ts.operator.password), basic('', key), basic(ts.operator.email, key)]) {
    const r = await http('POST', `${ts.api}/oauth/authorizations`, { headers: { ...creds, 'content-type': 'application/json', accept: 'application/vnd.slipway+json; version=3' }, body: '{}' });
    t.equal(r.status, 401);
    t.equal(r.json.id, 'unauthorized');
    t.match(r.json.message, /a username and password never create an authorization, because the second factor is mandatory/);
  }
  t.equal((await api(ts, 'GET', '/oauth/authorizations', key)).json.length, before, 'nothing was created');
  t.equal((await http('GET', `${ts.api}/apps`, { headers: basic('', key) })).status, 200, 'Basic with a token still works on ordinary endpoints');
});

t.test('list and info never reveal token values; ~ is the API key', async (t) => {
  const created = (await api(ts, 'POST', '/oauth/authorizations', key, { description: 'listed' })).json;
  const list = await api(ts, 'GET', '/oauth/authorizations', key);
  t.equal(list.status, 200);
  t.equal(list.headers['accept-ranges'], 'id');
  const listed = list.json.find((a: { id: string }) => a.id === created.id);
  t.equal(listed.access_token.token, 'SVC-**********' + created.access_token.token.slice(-4));
  t.notOk(list.text.includes(created.access_token.token), 'the value appears nowhere');
  const info = await api(ts, 'GET', `/oauth/authorizations/${created.id}`, key);
  t.equal(info.status, 200);
  t.equal(info.json.description, 'listed');
  t.equal(info.json.access_token.id, created.access_token.id);
  t.notOk(info.text.includes(created.access_token.token));
  const tilde = await api(ts, 'GET', '/oauth/authorizations/~', key);
  t.equal(tilde.status, 200);
  t.equal(tilde.json.id, ts.server.bootstrap!.account.apiKeyAuthorizationId);
  t.equal(tilde.json.description, 'API key');
  const missing = await api(ts, 'GET', '/oauth/authorizations/00000000-0000-4000-8000-000000000000', key);
  t.equal(missing.status, 404);
  t.same(missing.json, { id: 'not_found', message: "Couldn't find that authorization.", resource: 'authorization' });
});

t.test("someone else's authorization is not found, and cannot be changed", async (t) => {
  const other = await createAccount(ts, 'other-direct@example.com');
  const theirs = (await api(ts, 'POST', '/oauth/authorizations', other.apiKey, { description: 'theirs' })).json;
  for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/actions/regenerate-tokens']] as const) {
    const r = await api(ts, method, `/oauth/authorizations/${theirs.id}${path}`, key, method === 'PATCH' ? { description: 'mine now' } : undefined);
    t.equal(r.status, 404, `${method}${path}`);
  }
  t.equal((await api(ts, 'GET', '/account', theirs.access_token.token)).status, 200, 'their token still works');
  t.equal((await api(ts, 'GET', `/oauth/authorizations/${theirs.id}`, other.apiKey)).json.description, 'theirs');
});

t.test('PATCH description', async (t) => {
  const a = (await api(ts, 'POST', '/oauth/authorizations', key, { description: 'old' })).json;
  ts.clock.advance(5000);
  const r = await api(ts, 'PATCH', `/oauth/authorizations/${a.id}`, key, { description: 'new' });
  t.equal(r.status, 200);
  t.equal(r.json.description, 'new');
  t.not(r.json.updated_at, a.updated_at);
  const bad = await api(ts, 'PATCH', `/oauth/authorizations/${a.id}`, key, { description: ['x'] });
  t.equal(bad.status, 422);
  t.equal((await api(ts, 'GET', `/oauth/authorizations/${a.id}`, key)).json.description, 'new', 'a refused PATCH changes nothing');
  const override = await http('POST', `${ts.api}/oauth/authorizations/${a.id}`, {
    headers: { authorization: `Bearer ${key}`, 'x-http-method-override': 'PATCH', 'content-type': 'application/json' }, body: '{"description":"via override"}',
  });
  t.equal(override.json.description, 'via override', 'X-Http-Method-Override: PATCH');
});

t.test('regenerate: new value, same lifetime, old value fails at once', async (t) => {
  const a = (await api(ts, 'POST', '/oauth/authorizations', key, { expires_in: 600 })).json;
  const r = await api(ts, 'POST', `/oauth/authorizations/${a.id}/actions/regenerate-tokens`, key);
  t.equal(r.status, 200);
  t.match(r.json.access_token.token, /^SVC-/);
  t.not(r.json.access_token.token, a.access_token.token);
  t.not(r.json.access_token.id, a.access_token.id);
  t.equal(r.json.access_token.expires_in, 600);
  t.equal((await api(ts, 'GET', '/account', a.access_token.token)).status, 401, 'old value refused');
  t.equal((await api(ts, 'GET', '/account', r.json.access_token.token)).status, 200, 'new value works');
});

t.test('revoke: 200 with the record; every token fails at once; the API key cannot be revoked', async (t) => {
  const a = (await api(ts, 'POST', '/oauth/authorizations', key, { description: 'to revoke' })).json;
  const r = await api(ts, 'DELETE', `/oauth/authorizations/${a.id}`, key);
  t.equal(r.status, 200);
  t.equal(r.json.id, a.id);
  t.equal(r.json.description, 'to revoke');
  t.equal(r.json.access_token.id, a.access_token.id);
  t.match(r.headers.etag, /^"/);
  t.match(r.headers['ratelimit-remaining'], /^\d+$/);
  const gone = await api(ts, 'GET', '/account', a.access_token.token);
  t.equal(gone.status, 401);
  t.same(gone.json, { id: 'unauthorized', message: 'Invalid credentials provided.' });
  t.equal((await api(ts, 'GET', `/oauth/authorizations/${a.id}`, key)).status, 404, 'no longer listed');
  t.equal((await api(ts, 'DELETE', `/oauth/authorizations/${a.id}`, key)).status, 404, 'revoking twice');
  t.equal((await api(ts, 'POST', `/oauth/authorizations/${a.id}/actions/regenerate-tokens`, key)).status, 404, 'cannot be revived');
  const apiKey = await api(ts, 'DELETE', '/oauth/authorizations/~', key);
  t.equal(apiKey.status, 422);
  t.match(apiKey.json.message, /API key cannot be revoked; regenerate it instead/);
  t.equal((await api(ts, 'GET', '/account', key)).status, 200, 'the API key still works');
});

t.test('legacy tokens without the prefix still authenticate; regenerating gives a prefixed one', async (t) => {
  const user = await createAccount(ts, 'legacy@example.com');
  const legacy = '01234567-89ab-4cde-8f01-23456789abcd';
  const record = await ts.server.oauth.authorizations.importLegacy(user.id, legacy, ['global'], 'imported');
  const me = await api(ts, 'GET', '/account', legacy);
  t.equal(me.status, 200);
  t.equal(me.json.email, 'legacy@example.com');
  const info = await api(ts, 'GET', `/oauth/authorizations/${record.id}`, legacy);
  t.equal(info.json.access_token.token, '**********abcd', 'redacted without a prefix');
  const regen = await api(ts, 'POST', `/oauth/authorizations/${record.id}/actions/regenerate-tokens`, legacy);
  t.equal(regen.status, 200);
  t.match(regen.json.access_token.token, /^SVC-[A-Za-z0-9_-]{61}$/);
  t.equal((await api(ts, 'GET', '/account', legacy)).status, 401, 'the legacy value is retired');
  t.equal((await api(ts, 'GET', '/account', regen.json.access_token.token)).status, 200);
});

t.test('only global tokens manage authorizations', async (t) => {
  const narrow = (await api(ts, 'POST', '/oauth/authorizations', key, { scope: ['write-protected', 'identity'] })).json.access_token.token;
  const r = await api(ts, 'POST', '/oauth/authorizations', narrow, { scope: ['global'] });
  t.equal(r.status, 403);
  t.equal(r.json.id, 'forbidden');
  t.match(r.json.message, /needs the global scope/);
  t.equal((await api(ts, 'GET', '/oauth/authorizations', narrow)).status, 403, 'nor list them');
});

t.test('slipway:authorization events: created, regenerated, revoked, without secrets', async (t) => {
  const seen: AuthorizationEvent[] = [];
  const stop = subscribeEvent('authorization', (m) => seen.push(m));
  t.teardown(stop);
  const a = (await api(ts, 'POST', '/oauth/authorizations', key, { scope: ['read'] })).json;
  await api(ts, 'POST', `/oauth/authorizations/${a.id}/actions/regenerate-tokens`, key);
  await api(ts, 'DELETE', `/oauth/authorizations/${a.id}`, key);
  t.same(seen.map((e) => [e.action, e.authorizationId]), [['created', a.id], ['regenerated', a.id], ['revoked', a.id]]);
  t.same(seen[0], { action: 'created', authorizationId: a.id, accountId: ts.server.bootstrap!.account.id, teamId: null, clientId: null, scopes: ['read'] });
  t.notOk(JSON.stringify(seen).includes('SVC-'), 'no token values');
});
