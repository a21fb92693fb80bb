/**
 * The authorize endpoint and the pages around it: request validation (page vs redirect),
 * scopes in both delimiters, PKCE S256, consent content and denial, CSRF, sign-in with the
 * mandatory second factor, the lockout, TOTP replay, sign-out, trusted clients, metadata.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { api, Browser, createAccount, currentCode, findForm, registerClient, signIn, walkAuthorization } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { http } from '../helpers/http.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const client = await registerClient(ts, ts.operator.apiKey, 'Dash <b>&</b> "Co"', 'https://app.example.test/cb');
const authorizeUrl = (params: Record<string, string>) => `/oauth/authorize?${new URLSearchParams({ client_id: client.id, response_type: 'code', scope: 'identity', ...params })}`;

async function exchange(code: string, extra: Record<string, string> = {}) {
  return http('POST', `${ts.auth}/oauth/token`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_secret: client.secret, ...extra }).toString(),
  });
}

t.test('errors before the client is trusted are pages, never redirects', async (t) => {
  const b = new Browser(ts.auth);
  for (const [label, url] of [
    ['no client_id', '/oauth/authorize?response_type=code&scope=identity'],
    ['unknown client', '/oauth/authorize?client_id=6f1c7e0a-0000-4000-8000-000000000000&response_type=code&scope=identity'],
    ['malformed client', '/oauth/authorize?client_id=%3Cscript%3E&response_type=code'],
    ['foreign redirect_uri', authorizeUrl({ redirect_uri: 'https://evil.example/cb' })],
    ['redirect_uri with another path', authorizeUrl({ redirect_uri: 'https://app.example.test/cb/../x' })],
  ] as const) {
    const r = await b.get(url);
    t.equal(r.status, 400, `${label}: 400`);
    t.notOk(r.headers.location, `${label}: no redirect`);
    t.match(r.headers['content-type'], /^text\/html/);
    t.match(r.text, /Authorization failed/);
  }
});

t.test('request errors after that go back to the client with state', async (t) => {
  const b = new Browser(ts.auth);
  const cases: Array<[Record<string, string>, string]> = [
    [{ response_type: 'token' }, 'unsupported_response_type'],
    [{ response_type: '' }, 'invalid_request'],
    [{ scope: 'identity admin' }, 'invalid_scope'],
    [{ scope: '' }, 'invalid_scope'],
    [{ code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }, 'invalid_request'],
    [{ code_challenge: 'short', code_challenge_method: 'S256' }, 'invalid_request'],
    [{ code_challenge_method: 'S256' }, 'invalid_request'],
  ];
  for (const [params, error] of cases) {
    const r = await b.get(authorizeUrl({ state: 'keep me', ...params }));
    t.equal(r.status, 302, `${JSON.stringify(params)} redirects`);
    const loc = new URL(r.headers.location!);
    t.equal(loc.origin + loc.pathname, 'https://app.example.test/cb');
    t.equal(loc.searchParams.get('error'), error, `${JSON.stringify(params)} → ${error}`);
    t.equal(loc.searchParams.get('state'), 'keep me');
    t.ok(loc.searchParams.get('error_description'));
  }
  const twice = await b.get(authorizeUrl({}) + '&scope=read');
  t.equal(new URL(twice.headers.location!).searchParams.get('error'), 'invalid_request', 'a repeated parameter');
});

t.test('not signed in: sign-in first, then back to the request', async (t) => {
  const b = new Browser(ts.auth);
  const r = await b.get(authorizeUrl({ state: 'a' }));
  t.equal(r.status, 302);
  const login = new URL(r.headers.location!, ts.auth);
  t.equal(login.pathname, '/login');
  t.match(login.searchParams.get('return_to'), /^\/oauth\/authorize\?client_id=/);
  const cookie = r.headers['set-cookie']!;
  t.match(cookie, /^slipway_sid=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/, 'HttpOnly SameSite cookie');
});

t.test('consent page: scopes in plain words, escaped client name, anti-framing headers', async (t) => {
  const b = new Browser(ts.auth);
  await signIn(b, ts.operator, ts.clock);
  const r = await b.get(authorizeUrl({ scope: 'read,identity write-protected', state: 's' }));
  t.equal(r.status, 200);
  t.match(r.text, /Dash &lt;b&gt;&amp;&lt;\/b&gt; &quot;Co&quot;/, 'client name escaped');
  t.notMatch(r.text, /<b>&<\/b>/);
  t.match(r.text, /<code>identity<\/code>: Read your account information/);
  t.match(r.text, /<code>read<\/code>: See your apps/);
  t.match(r.text, /<code>write-protected<\/code>: See and change your apps .* including configuration variables/);
  t.match(r.text, /app\.example\.test/, 'names where the user is sent');
  t.match(r.text, /<select id="owner" name="owner">\s*<option value="personal">Personal account/, 'owner picker, personal only until teams exist');
  t.equal(r.headers['x-frame-options'], 'DENY');
  t.match(r.headers['content-security-policy'], /frame-ancestors 'none'/);
  t.match(r.headers['content-security-policy'], /form-action 'self' https:\/\/app\.example\.test/);
  t.equal(r.headers['cache-control'], 'no-store');
  const form = findForm(r.text, '/oauth/authorize');
  t.equal(form.fields.scope, 'read,identity write-protected');
  const ok = await b.post('/oauth/authorize', { ...form.fields, decision: 'allow' });
  t.equal(ok.status, 303);
  const code = new URL(ok.headers.location!).searchParams.get('code')!;
  const tok = await exchange(code);
  t.equal(tok.status, 200);
  const list = await api(ts, 'GET', `/oauth/authorizations`, ts.operator.apiKey);
  const created = list.json.find((a: { client: { id: string } | null; access_token: { token: string } }) => a.client?.id === client.id && a.access_token.token.endsWith(tok.json.access_token.slice(-4)));
  t.same(created.scope, ['identity', 'read', 'write-protected'], 'comma and space delimiters both work');
});

t.test('CSRF: a consent or sign-in post without the form token changes nothing', async (t) => {
  const b = new Browser(ts.auth);
  await signIn(b, ts.operator, ts.clock);
  const page = await b.get(authorizeUrl({ state: 'csrf' }));
  const form = findForm(page.text, '/oauth/authorize');
  for (const bad of ['', 'forged', form.fields._csrf!.slice(0, -2) + 'xx']) {
    const r = await b.post('/oauth/authorize', { ...form.fields, _csrf: bad, decision: 'allow' });
    t.equal(r.status, 403);
    t.notOk(r.headers.location);
  }
  const other = new Browser(ts.auth);
  const stolen = await other.post('/oauth/authorize', { ...form.fields, decision: 'allow' });
  t.equal(stolen.status, 403, "another browser cannot reuse this browser's form");
  const login = await new Browser(ts.auth).post('/login', { email: ts.operator.email, password: ts.operator.password, code: currentCode(ts.operator, ts.clock) });
  t.equal(login.status, 403, 'sign-in without the form token');
  t.notOk(login.headers['location']);
});

t.test('PKCE S256', async (t) => {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const b = new Browser(ts.auth);
  const url = `${ts.auth}${authorizeUrl({ code_challenge: challenge, code_challenge_method: 'S256' })}`;
  const code1 = (await walkAuthorization(b, url, ts.operator, ts.clock)).searchParams.get('code')!;
  t.equal((await exchange(code1)).json.error, 'invalid_grant', 'verifier missing');
  t.equal((await exchange(code1, { code_verifier: randomBytes(32).toString('base64url') })).json.error, 'invalid_grant', 'wrong verifier');
  const good = await exchange(code1, { code_verifier: verifier });
  t.equal(good.status, 200, 'right verifier');
  const code2 = (await walkAuthorization(b, `${ts.auth}${authorizeUrl({})}`, ts.operator, ts.clock)).searchParams.get('code')!;
  t.equal((await exchange(code2, { code_verifier: verifier })).json.error, 'invalid_grant', 'a verifier without a challenge is refused');
});

t.test('codes expire after 5 minutes; redirect_uri must be repeated when it was sent', async (t) => {
  const b = new Browser(ts.auth);
  const code = (await walkAuthorization(b, `${ts.auth}${authorizeUrl({})}`, ts.operator, ts.clock)).searchParams.get('code')!;
  ts.clock.advance(5 * 60_000);
  const late = await exchange(code);
  t.equal(late.status, 400);
  t.equal(late.json.error, 'invalid_grant');
  const withUri = (await walkAuthorization(b, `${ts.auth}${authorizeUrl({ redirect_uri: client.redirectUri })}`, ts.operator, ts.clock)).searchParams.get('code')!;
  t.equal((await exchange(withUri)).json.error, 'invalid_grant', 'redirect_uri missing from the token request');
  t.equal((await exchange(withUri, { redirect_uri: 'https://app.example.test/other' })).json.error, 'invalid_grant', 'different redirect_uri');
  t.equal((await exchange(withUri, { redirect_uri: client.redirectUri })).status, 200);
});

t.test('sign-in: all three factors, lockout after 5 failures, TOTP codes used once', async (t) => {
  const user = await createAccount(ts, 'lockme@example.com');
  const b = new Browser(ts.auth);
  const missing = await b.post('/login', { ...findForm((await b.get('/login')).text).fields, email: user.email, password: user.password });
  t.equal(missing.status, 400, 'code missing');
  t.match(missing.text, /are all required/);
  const wrongCode = await signIn(b, user, ts.clock, '', { code: '000000' === currentCode(user, ts.clock) ? '111111' : '000000' });
  t.equal(wrongCode.status, 401);
  t.match(wrongCode.text, /4 more failures and sign-in pauses for 15 minutes/);
  for (let i = 0; i < 3; i++) t.equal((await signIn(b, user, ts.clock, '', { password: 'wrong password' })).status, 401);
  const locked = await signIn(b, user, ts.clock, '', { password: 'wrong password' });
  t.equal(locked.status, 429, 'the fifth failure locks');
  t.match(locked.text, /Sign-in is paused for 15 minutes, until \d\d:\d\d UTC/);
  const stillLocked = await signIn(b, user, ts.clock);
  t.equal(stillLocked.status, 429, 'even the right credentials are refused during the lockout');
  t.notOk(stillLocked.headers['location']);
  const unknown = await signIn(b, { ...user, email: 'nobody@example.com' }, ts.clock);
  t.equal(unknown.status, 401, 'unknown addresses fail like wrong passwords');
  t.match(unknown.text, /4 more failures/);
  ts.clock.advance(15 * 60_000);
  const ok = await signIn(b, user, ts.clock);
  t.equal(ok.status, 303, 'after 15 minutes sign-in works');
  t.equal((await new Browser(ts.auth).get('/login')).status, 200);
  // The same code a second time, within its 30-second step: refused (RFC 6238 §5.2).
  const b2 = new Browser(ts.auth);
  const page = await b2.get('/login');
  const replay = await b2.post('/login', { ...findForm(page.text).fields, email: user.email, password: user.password, code: currentCode(user, ts.clock) });
  t.equal(replay.status, 401, 'a TOTP code is accepted once');
});

t.test('sign-out ends the session; return_to cannot leave the host', async (t) => {
  const b = new Browser(ts.auth);
  const signedIn = await signIn(b, ts.operator, ts.clock, 'https://evil.example/');
  t.equal(signedIn.headers.location, '/', 'foreign return_to ignored');
  t.match(signedIn.headers['set-cookie'], /Max-Age=43200/, '12-hour session cookie');
  const home = await b.get('/');
  t.match(home.text, new RegExp(`signed in as ${ts.operator.email}`));
  t.equal((await b.get('/logout')).status, 200, 'GET shows a form, does not sign out');
  t.match((await b.get('/')).text, /signed in as/);
  const form = findForm(home.text, '/logout');
  const out = await b.post('/logout', form.fields);
  t.equal(out.status, 200);
  t.match(out.text, /You are signed out/);
  t.equal((await b.get('/')).status, 302, 'the session is gone');
  t.equal((await b.get(authorizeUrl({}))).headers.location?.startsWith('/login?'), true);
});

t.test('sessions end after 12 hours', async (t) => {
  const b = new Browser(ts.auth);
  await signIn(b, ts.operator, ts.clock);
  ts.clock.advance(12 * 3600_000);
  t.equal((await b.get('/')).status, 302);
});

t.test('a trusted first-party client skips consent; only the operator may mark one', async (t) => {
  const user = await createAccount(ts, 'plain@example.com');
  const refused = await api(ts, 'POST', '/oauth/clients', user.apiKey, { name: 'Mine', redirect_uri: 'https://x.example/cb', trusted: true });
  t.equal(refused.status, 403);
  t.match(refused.json.message, /Only the operator account can mark a client trusted/);
  const trusted = await api(ts, 'POST', '/oauth/clients', ts.operator.apiKey, { name: 'Slipway CLI', redirect_uri: 'http://localhost:7777/cb', trusted: true });
  t.equal(trusted.status, 201);
  t.equal(trusted.json.trusted, true);
  const b = new Browser(ts.auth);
  await signIn(b, user, ts.clock);
  const r = await b.get(`/oauth/authorize?client_id=${trusted.json.id}&response_type=code&scope=global&state=z`);
  t.equal(r.status, 302, 'no consent page');
  const loc = new URL(r.headers.location!);
  t.equal(loc.origin, 'http://localhost:7777');
  t.ok(loc.searchParams.get('code'));
  t.equal(loc.searchParams.get('state'), 'z');
});

t.test('authorization server metadata (RFC 8414)', async (t) => {
  const r = await http('GET', `${ts.auth}/.well-known/oauth-authorization-server`);
  t.equal(r.status, 200);
  t.equal(r.json.issuer, ts.auth);
  t.equal(r.json.authorization_endpoint, `${ts.auth}/oauth/authorize`);
  t.equal(r.json.token_endpoint, `${ts.auth}/oauth/token`);
  t.same(r.json.response_types_supported, ['code']);
  t.same(r.json.code_challenge_methods_supported, ['S256']);
  t.same(r.json.grant_types_supported, ['authorization_code', 'refresh_token']);
  t.ok(r.json.scopes_supported.includes('read-protected'));
  const css = await http('GET', `${ts.auth}/assets/site.css`);
  t.equal(css.status, 200);
  t.equal((await http('GET', `${ts.auth}/nope`)).status, 404);
});
