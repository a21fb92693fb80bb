/**
 * Bad input on both hosts gets the right 4xx, never a 5xx, and changes nothing: malformed and
 * oversized token requests and forms, unknown grant types, mixed client authentication, bad
 * JSON and oversized JSON on the API.
 */
import t from 'tap';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { api, Browser, findForm, registerClient, signIn, walkAuthorization } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { http, type Reply } from '../helpers/http.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;
const client = await registerClient(ts, key);
const FORM = 'application/x-www-form-urlencoded';
const browser = new Browser(ts.auth);
const code = (await walkAuthorization(browser, `${ts.auth}/oauth/authorize?client_id=${client.id}&response_type=code&scope=read`, ts.operator, ts.clock)).searchParams.get('code')!;

function token(body: string | Buffer, headers: Record<string, string> = { 'content-type': FORM }, method = 'POST'): Promise<Reply> {
  return http(method, `${ts.auth}/oauth/token`, { headers, body: method === 'GET' ? undefined : body });
}
const basicAuth = (id: string, secret: string) => 'Basic ' + Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64');
const form = (f: Record<string, string>) => new URLSearchParams(f).toString();
const tap = t;

function oauthError(t: Pick<typeof tap, 'equal' | 'type'>, r: Reply, status: number, error: string, label: string): void {
  t.equal(r.status, status, `${label}: ${status}`);
  t.equal(r.json?.error, error, `${label}: ${error}`);
  t.type(r.json?.error_description, 'string', `${label}: described`);
  t.equal(r.headers['cache-control'], 'no-store', `${label}: no-store`);
  t.equal(r.headers['content-type'], 'application/json;charset=utf-8');
}

t.test('token endpoint: malformed requests', async (t) => {
  const cases: Array<[string, Promise<Reply>, number, string]> = [
    ['JSON body', token(JSON.stringify({ grant_type: 'authorization_code', code }), { 'content-type': 'application/json' }), 400, 'invalid_request'],
    ['no content type', token(form({ grant_type: 'authorization_code', code }), {}), 400, 'invalid_request'],
    ['empty form', token(''), 400, 'invalid_request'],
    ['binary garbage', token(Buffer.from([0xff, 0xfe, 0x00, 0x26, 0x3d, 0x25])), 400, 'invalid_request'],
    ['password grant', token(form({ grant_type: 'password', username: 'a', password: 'b' })), 400, 'unsupported_grant_type'],
    ['client_credentials grant', token(form({ grant_type: 'client_credentials', client_secret: client.secret })), 400, 'unsupported_grant_type'],
    ['repeated grant_type', token(`grant_type=authorization_code&grant_type=refresh_token&code=${code}`), 400, 'invalid_request'],
    ['repeated code', token(`grant_type=authorization_code&code=${code}&code=${code}&client_secret=${client.secret}`), 400, 'invalid_request'],
    ['missing code', token(form({ grant_type: 'authorization_code', client_secret: client.secret })), 400, 'invalid_request'],
    ['missing refresh_token', token(form({ grant_type: 'refresh_token', client_secret: client.secret })), 400, 'invalid_request'],
    ['unknown code', token(form({ grant_type: 'authorization_code', code: 'nope', client_secret: client.secret })), 400, 'invalid_grant'],
    ['unknown refresh token', token(form({ grant_type: 'refresh_token', refresh_token: 'SVC-nope', client_secret: client.secret })), 400, 'invalid_grant'],
    ['an access token as refresh token', token(form({ grant_type: 'refresh_token', refresh_token: key, client_secret: client.secret })), 400, 'invalid_grant'],
    ['no client secret', token(form({ grant_type: 'authorization_code', code })), 401, 'invalid_client'],
    ['Basic and body secret', token(form({ grant_type: 'authorization_code', code, client_secret: client.secret }), { 'content-type': FORM, authorization: basicAuth(client.id, client.secret) }), 400, 'invalid_request'],
    ['Basic client_id differs from body', token(form({ grant_type: 'authorization_code', code, client_id: '6f1c7e0a-0000-4000-8000-000000000000' }), { 'content-type': FORM, authorization: basicAuth(client.id, client.secret) }), 400, 'invalid_request'],
    ['malformed Basic', token(form({ grant_type: 'authorization_code', code }), { 'content-type': FORM, authorization: 'Basic !!!' }), 401, 'invalid_client'],
    ['Basic with a bad escape', token(form({ grant_type: 'authorization_code', code }), { 'content-type': FORM, authorization: 'Basic ' + Buffer.from('%zz:%zz').toString('base64') }), 401, 'invalid_client'],
    ['Bearer client auth', token(form({ grant_type: 'authorization_code', code }), { 'content-type': FORM, authorization: `Bearer ${key}` }), 401, 'invalid_client'],
    ['unknown client_id', token(form({ grant_type: 'authorization_code', code, client_id: '6f1c7e0a-0000-4000-8000-000000000000', client_secret: 'x' })), 401, 'invalid_client'],
    ['oversized body', token(form({ grant_type: 'authorization_code', code, pad: 'x'.repeat(20_000) })), 413, 'invalid_request'],
    ['GET', token('', {}, 'GET'), 405, 'invalid_request'],
  ];
  for (const [label, p, status, error] of cases) oauthError(t, await p, status, error, label);
  t.equal((await token('', {}, 'GET')).headers.allow, 'POST');
  const chunked = await request(`${ts.auth}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': FORM },
    body: Readable.from([Buffer.from(form({ grant_type: 'authorization_code', code })), Buffer.from('&pad=' + 'y'.repeat(40_000))]),
  });
  t.equal(chunked.statusCode, 413, 'oversized chunked body (no Content-Length)');
  t.equal(((await chunked.body.json()) as { error: string }).error, 'invalid_request');
  // After all of that the code is still unused: none of the refusals consumed it.
  const ok = await token(form({ grant_type: 'authorization_code', code, client_secret: client.secret }));
  t.equal(ok.status, 200, 'the code still works');
  const refreshToken = ok.json.refresh_token;
  const narrowed = await token(form({ grant_type: 'refresh_token', refresh_token: refreshToken, client_secret: client.secret, scope: 'global' }));
  oauthError(t, narrowed, 400, 'invalid_scope', 'refresh asking another scope');
  const same = await token(form({ grant_type: 'refresh_token', refresh_token: refreshToken, client_secret: client.secret, scope: 'read' }));
  t.equal(same.status, 201, 'refresh with the same scope (requests-oauthlib style) works');
  const emptyScope = await token(form({ grant_type: 'refresh_token', refresh_token: refreshToken, client_secret: client.secret, scope: '' }));
  t.equal(emptyScope.status, 201, 'an empty scope is absent');
});

t.test('auth host forms: malformed posts are refused with a page and change nothing', async (t) => {
  const b = new Browser(ts.auth);
  const page = await b.get('/login');
  const fields = findForm(page.text).fields;
  const json = await b.request('POST', '/login', undefined, { 'content-type': 'application/json' });
  t.equal(json.status, 400, 'JSON to the sign-in form');
  t.match(json.headers['content-type'], /^text\/html/);
  const dup = await http('POST', `${ts.auth}/login`, { headers: { 'content-type': FORM, cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ') }, body: `${form(fields)}&email=a@b.c&email=d@e.f&password=x&code=123456` });
  t.equal(dup.status, 400, 'repeated e-mail field');
  const big = await b.post('/login', { ...fields, email: 'x'.repeat(20_000) });
  t.equal(big.status, 413, 'oversized sign-in form');
  t.equal((await b.get('/')).status, 302, 'still signed out');
  const consent = await b.request('POST', '/oauth/authorize', undefined, { 'content-type': FORM });
  t.equal(consent.status, 403, 'an empty consent post');
  await signIn(b, ts.operator, ts.clock);
  const consentPage = await b.get(`/oauth/authorize?client_id=${client.id}&response_type=code&scope=read&state=q`);
  const cf = findForm(consentPage.text, '/oauth/authorize').fields;
  const noDecision = await b.post('/oauth/authorize', cf);
  t.equal(noDecision.status, 400, 'neither Allow nor Deny');
  const badOwner = await b.post('/oauth/authorize', { ...cf, decision: 'allow', owner: '6f1c7e0a-0000-4000-8000-000000000000' });
  t.equal(badOwner.status, 400, 'an owner the user may not choose');
  const tampered = await b.post('/oauth/authorize', { ...cf, decision: 'allow', scope: 'root' });
  t.equal(tampered.status, 303, 'a tampered scope is re-validated');
  t.equal(new URL(tampered.headers.location!).searchParams.get('error'), 'invalid_scope');
  const wrongClient = await b.post('/oauth/authorize', { ...cf, decision: 'allow', client_id: 'nope' });
  t.equal(wrongClient.status, 400, 'a tampered client is an error page');
  t.notOk(wrongClient.headers.location);
  const list = await api(ts, 'GET', '/oauth/authorizations', key);
  t.equal(list.json.length, 2, 'only the API key and the one exchanged authorization exist');
});

t.test('API: bad JSON and oversized bodies → 400/413, nothing created, no 5xx', async (t) => {
  const before = (await api(ts, 'GET', '/apps', key)).json.length;
  const cases: Array<[string, string | Buffer, number, string]> = [
    ['truncated', '{"name":"bad-json"', 400, 'bad_request'],
    ['array', '["bad-json"]', 400, 'bad_request'],
    ['number', '42', 400, 'bad_request'],
    ['not JSON', 'name=bad-json', 400, 'bad_request'],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), 400, 'bad_request'],
    ['NUL in a string', '{"name":"bad\\u0000json"}', 400, 'bad_request'],
    ['unpaired surrogate', '{"name":"bad-json","x":"\\ud800"}', 400, 'bad_request'],
    ['NUL in a property name', '{"name":"bad-json","a\\u0000":1}', 400, 'bad_request'],
    ['wrong types', '{"name":42}', 422, 'invalid_params'],
    ['too large', JSON.stringify({ name: 'huge-app', pad: 'x'.repeat(1024 * 1024) }), 413, 'bad_request'],
  ];
  for (const [label, body, status, id] of cases) {
    const r = await http('POST', `${ts.api}/apps`, { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
    t.equal(r.status, status, `${label}: ${status}`);
    t.equal(r.json?.id, id, `${label}: ${id}`);
  }
  for (const body of ['{"description":', '{"scope":"global"}']) {
    const r = await api(ts, 'POST', '/oauth/authorizations', key, body);
    t.ok(r.status === 400 || r.status === 422, `authorizations ${body}: ${r.status}`);
  }
  t.equal((await api(ts, 'GET', '/apps', key)).json.length, before, 'no app was created');
  t.equal((await api(ts, 'GET', '/oauth/authorizations', key)).json.length, 2, 'no authorization was created');
  const badAuth = await http('GET', `${ts.api}/account`, { headers: { authorization: 'Token abc' } });
  t.equal(badAuth.status, 401);
  const emptyBearer = await http('GET', `${ts.api}/account`, { headers: { authorization: 'Bearer' } });
  t.equal(emptyBearer.status, 401);
});
