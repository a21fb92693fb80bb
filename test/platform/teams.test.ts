/**
 * Teams (docs/rules.md What the service does 3-4, Endpoints 5-6, Authentication 8-11): roles, team apps, team authorizations
 * (admins only, expiry choices, shown once, regenerate, revoke by any admin, team-only reach,
 * user-only actions refused even with global scope), the third-party OAuth switch on the API
 * and the registry, and the consent page's team picker.
 */
import t from 'tap';
import { api, createAccount, registerClient, walkAuthorization, Browser } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, http } from '../helpers/http.js';
import { createAuthorizationInTransaction } from '../../engine/identity/authorizations.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const admin = ts.operator.apiKey;
const bob = await createAccount(ts, 'bob@example.com');
const carol = await createAccount(ts, 'carol@example.com');
const DAY = 24 * 3600_000;

async function ok(r: Promise<{ status: number; text: string; json: any }>, status = 200) {
  const res = await r;
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return res.json;
}

const team = await ok(api(ts, 'POST', '/teams', admin, { name: 'acme' }), 201);
await ok(api(ts, 'PUT', '/teams/acme/members', admin, { email: 'bob@example.com', role: 'member' }));
await ok(api(ts, 'POST', '/apps', bob.apiKey, { name: 'acme-web', team: 'acme' }), 201);
await ok(api(ts, 'POST', '/apps', admin, { name: 'personal-app' }), 201);

t.test('roles and team apps', async (t) => {
  t.same((await api(ts, 'GET', '/teams', bob.apiKey)).json.map((x: any) => [x.name, x.role]), [['acme', 'member']]);
  t.equal((await api(ts, 'GET', '/apps/acme-web', admin)).json.team.name, 'acme', 'admins see team apps');
  t.equal((await api(ts, 'GET', '/apps/acme-web', carol.apiKey)).status, 404, 'non-members do not');
  t.equal((await api(ts, 'GET', '/teams/acme', carol.apiKey)).status, 404);
  t.equal((await api(ts, 'PUT', '/teams/acme/members', bob.apiKey, { email: 'carol@example.com', role: 'member' })).status, 403, 'members cannot manage members');
  t.equal((await api(ts, 'DELETE', '/apps/acme-web', bob.apiKey)).status, 403, 'members cannot delete team apps');
  t.equal((await api(ts, 'PUT', '/teams/acme/members', admin, { email: ts.operator.email, role: 'member' })).status, 409, 'the last admin stays');
  t.same((await api(ts, 'GET', '/teams/acme/apps', bob.apiKey)).json.map((a: any) => a.name), ['acme-web']);
});

t.test('team authorizations', async (t) => {
  for (const days of [30, 60, 90, 365]) {
    const r = await api(ts, 'POST', '/teams/acme/authorizations', admin, { description: `ci ${days}`, expiry_days: days });
    t.equal(r.status, 201);
    t.match(r.json.access_token.token, /^SVC-[A-Za-z0-9_-]{61}$/, 'token shown at creation');
    t.equal(r.json.access_token.expires_in, days * 86400, `${days}-day expiry`);
    t.equal(r.json.team.name, 'acme');
  }
  const dflt = await api(ts, 'POST', '/teams/acme/authorizations', admin, { description: 'default' });
  t.equal(dflt.json.access_token.expires_in, 365 * 86400, 'default is one year');
  t.equal((await api(ts, 'POST', '/teams/acme/authorizations', admin, { expiry_days: 45 })).status, 422);
  t.equal((await api(ts, 'POST', '/teams/acme/authorizations', bob.apiKey, { description: 'x' })).status, 403, 'only admins create them');
  const listed = (await api(ts, 'GET', '/teams/acme/authorizations', admin)).json;
  t.equal(listed.length, 5);
  t.notOk(listed.some((a: any) => a.access_token?.token?.length === 65), 'values are not shown again');
  t.notOk((await api(ts, 'GET', '/oauth/authorizations', admin)).json.some((a: any) => a.team), 'a plain list excludes team tokens');

  const token = dflt.json.access_token.token;
  t.equal((await api(ts, 'GET', '/apps/acme-web', token)).status, 200, 'team token reaches team apps');
  t.equal((await api(ts, 'GET', '/apps/personal-app', token)).status, 404, 'but nothing personal');
  t.same((await api(ts, 'GET', '/apps', token)).json.map((a: any) => a.name), ['acme-web']);
  const made = await api(ts, 'POST', '/apps', token, { name: 'acme-worker' });
  t.equal(made.json.team.name, 'acme', 'apps created with a team token belong to the team');
  for (const [method, path, body] of [['GET', '/account', undefined], ['POST', '/oauth/authorizations', { description: 'x' }], ['GET', '/oauth/authorizations', undefined], ['POST', '/teams', { name: 'evil' }], ['POST', '/oauth/clients', { name: 'x', redirect_uri: 'https://x.example/cb' }]] as const) {
    const r = await api(ts, method, path, token, body);
    t.equal(r.status, 403, `${method} ${path} refused for a global-scope team token`);
    t.match(r.json.message, /team token/);
  }

  // Any admin regenerates and revokes.
  await ok(api(ts, 'PUT', '/teams/acme/members', admin, { email: 'carol@example.com', role: 'admin' }));
  const regen = await api(ts, 'POST', `/oauth/authorizations/${dflt.json.id}/actions/regenerate-tokens`, carol.apiKey);
  t.equal(regen.status, 200);
  t.equal((await api(ts, 'GET', '/apps/acme-web', token)).status, 401, 'the previous value fails at once');
  const fresh = regen.json.access_token.token;
  t.equal((await api(ts, 'GET', '/apps/acme-web', fresh)).status, 200);
  t.equal((await api(ts, 'DELETE', `/oauth/authorizations/${dflt.json.id}`, bob.apiKey)).status, 404, 'members cannot revoke');
  t.equal((await api(ts, 'DELETE', `/oauth/authorizations/${dflt.json.id}`, carol.apiKey)).status, 200);
  t.equal((await api(ts, 'GET', '/apps/acme-web', fresh)).status, 401, 'revoked: disabled at once');
  t.equal((await api(ts, 'GET', `/oauth/authorizations/${dflt.json.id}`, admin)).status, 404, 'and permanently');

  const short = await api(ts, 'POST', '/teams/acme/authorizations', admin, { description: 'short', expiry_days: 30 });
  ts.clock.advance(29 * DAY);
  t.equal((await api(ts, 'GET', '/apps/acme-web', short.json.access_token.token)).status, 200);
  ts.clock.advance(2 * DAY);
  t.equal((await api(ts, 'GET', '/apps/acme-web', short.json.access_token.token)).status, 401, 'expired after 30 days');
});

t.test('third-party OAuth access switch', async (t) => {
  const thirdParty = await registerClient(ts, carol.apiKey, 'Some integration');
  const firstParty = await api(ts, 'POST', '/oauth/clients', admin, { name: 'Our dashboard', redirect_uri: 'https://dash.example/cb', trusted: true });
  const now = ts.clock.now();
  const { store } = ts.server;
  const issue = (clientId: string | null) => store.metadata.transact((tx) => createAuthorizationInTransaction(tx, {
    kind: clientId ? 'web' : 'direct', accountId: ts.server.bootstrap!.account.id, description: 't', scope: ['global'], clientId, accessTokenTtlMs: 8 * 3600_000, withRefreshToken: clientId !== null,
  }, now)).then((i) => i.accessToken.token);
  const third = await issue(thirdParty.id);
  const first = await issue(firstParty.json.id);
  const direct = await issue(null);
  const registry = ts.server.urls.registry;
  const tags = (token: string) => http('GET', `${registry}/v2/acme-web/web/tags/list`, { headers: basic('_', token) });

  t.equal((await api(ts, 'GET', '/apps/acme-web', third)).status, 200, 'on by default');
  t.equal((await api(ts, 'GET', '/teams/acme/preferences', admin)).json['third-party-oauth-access'], true);
  t.equal((await api(ts, 'PATCH', '/teams/acme/preferences', bob.apiKey, { 'third-party-oauth-access': false })).status, 403, 'admins only');
  await ok(api(ts, 'PATCH', '/teams/acme/preferences', admin, { 'third-party-oauth-access': false }));
  const refused = await api(ts, 'GET', '/apps/acme-web', third);
  t.equal(refused.status, 403);
  t.match(refused.json.message, /Third-party OAuth access to the resources of team acme is turned off/);
  t.equal((await api(ts, 'GET', '/apps/acme-web/releases', third)).status, 403, 'releases too');
  const reg = await tags(third);
  t.equal(reg.status, 403, 'and the registry');
  t.match(reg.json.errors[0].message, /Third-party OAuth access/);
  t.equal((await api(ts, 'GET', '/apps/acme-web', first)).status, 200, 'first-party (trusted) clients keep working');
  t.equal((await api(ts, 'GET', '/apps/acme-web', direct)).status, 200, 'direct authorizations keep working');
  t.not((await tags(direct)).status, 403);
  t.equal((await api(ts, 'GET', '/apps/personal-app', third)).status, 200, 'personal apps are not affected');
  await ok(api(ts, 'PATCH', '/apps/personal-app', admin, { team: 'acme' }));
  t.equal((await api(ts, 'GET', '/apps/personal-app', third)).status, 403, 'an app moved into the team stops being reachable');
  await ok(api(ts, 'PATCH', '/teams/acme/preferences', admin, { 'third-party-oauth-access': true }));
  t.equal((await api(ts, 'GET', '/apps/acme-web', third)).status, 200, 'switched back on');
});

t.test('consent page: a team admin picks the owning team', async (t) => {
  const client = await registerClient(ts, carol.apiKey, 'Team picker app');
  const browser = new Browser(ts.auth);
  const url = `${ts.auth}/oauth/authorize?client_id=${client.id}&response_type=code&scope=global&state=s1`;
  const creds = { email: ts.operator.email, password: ts.operator.password, totpSecret: ts.operator.totpSecret };
  const redirect = await walkAuthorization(browser, url, creds, ts.clock, 'allow', { owner: team.id });
  const code = redirect.searchParams.get('code')!;
  t.ok(code, 'code issued');
  const tok = await http('POST', `${ts.auth}/oauth/token`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_secret: client.secret }).toString(),
  });
  t.equal(tok.status, 200, tok.text);
  const token = tok.json.access_token;
  t.equal((await api(ts, 'GET', '/apps/acme-web', token)).status, 200, 'the team-owned token reaches team apps');
  t.equal((await api(ts, 'GET', '/account', token)).status, 403, 'and no user-only actions');
  t.ok((await api(ts, 'GET', '/teams/acme/authorizations', admin)).json.some((a: any) => a.client?.id === client.id), "it appears in the team's authorizations");
});
