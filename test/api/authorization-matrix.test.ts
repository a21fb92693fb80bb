/**
 * The authorization matrix (docs/rules.md Authentication 6-7): every endpoint of the API route table ×
 * every scope × a valid, a revoked and an expired token. A valid token is allowed exactly when
 * its scope grants what the route declares (else 403 `forbidden` naming the scope); a revoked
 * or expired token always gets 401 `unauthorized`. A route added to the table without a case
 * here fails this test.
 */
import t from 'tap';
import { API_ROUTES } from '../../server/api/routes.js';
import { allows, SCOPES } from '../../engine/identity/scope.js';
import { api, createAccount } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, http } from '../helpers/http.js';
import { key as storeKey } from '../../engine/store.js';
import { releaseKey } from '../../engine/platform/releases.js';
import * as platform from '../../engine/platform/keyspaces.js';
import { repositoryManifests } from '../../engine/registry/keyspaces.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;
let serial = 0;
const unique = (p: string) => `${p}-${process.pid % 1000}-${++serial}`;

async function created(path: string, body: unknown): Promise<string> {
  const r = await api(ts, 'POST', path, key, body);
  if (r.status !== 201) throw new Error(`${path}: ${r.status} ${r.text}`);
  return r.json.id;
}

const app = await created('/apps', { name: 'matrix-app' });
const authz = await created('/oauth/authorizations', { description: 'matrix target' });
const client = await created('/oauth/clients', { name: 'matrix', redirect_uri: 'https://m.example/cb' });

// Team routes: a team the operator administers and an account to add and remove.
await created('/teams', { name: 'matrix-team' });
await createAccount(ts, 'matrix-member@example.com');
const addMember = () => api(ts, 'PUT', '/teams/matrix-team/members', key, { email: 'matrix-member@example.com', role: 'member' });

// Formation and release routes need a released app: seed one release and its formation entry in
// the store (what a container release writes; test/platform/releases.test.ts covers releasing).
const { store } = ts.server;
const seededAt = ts.clock.now();
async function seedFormation(type: string): Promise<string> {
  await store.metadata.transact((tx) => tx.put(platform.formations, storeKey(app, type), { id: `f-${type}`, appId: app, type, command: '/bin/sh -c run', quantity: 1, size: 'standard-1X', image: null, createdAt: seededAt, updatedAt: seededAt }));
  return type;
}
await seedFormation('web');
await store.metadata.transact(async (tx) => {
  tx.put(platform.releases, releaseKey(app, 1), {
    id: 'r-1', appId: app, version: 1, description: 'seeded', userId: ts.server.bootstrap!.account.id, createdAt: seededAt, restarted: ['web'], releasePhase: false, rollbackOf: null,
    images: { web: { configDigest: 'sha256:' + 'a'.repeat(64), manifestDigest: 'sha256:' + 'b'.repeat(64), repository: 'matrix-app/web', command: '/bin/sh -c run', workingDir: '/', warnings: [] } },
  });
  tx.put(platform.apps, app, { ...(await tx.get(platform.apps, app))!, releaseVersion: 1 });
});
await store.metadata.transact((tx) => tx.put(repositoryManifests, storeKey('matrix-app/web', 'sha256:' + 'b'.repeat(64)), seededAt)); // the released image is stored

// Webhook routes: a webhook on the app, an event (the config change's api:release) and its
// delivery (the destination's name does not resolve here: the attempt fails, the record stays).
async function webhookOn(appId: string): Promise<string> {
  return created(`/apps/${appId}/webhooks`, { include: ['api:release'], level: 'notify', url: 'https://hooks.invalid/matrix' });
}
const webhook = await webhookOn(app);
if ((await api(ts, 'PATCH', `/apps/${app}/config-vars`, key, { MATRIX_EVENT: '1' })).status !== 200) throw new Error('config change failed');
const deliveryDeadline = Date.now() + 30_000;
let delivery: string | undefined;
while (!(delivery = (await api(ts, 'GET', `/apps/${app}/webhook-deliveries`, key)).json?.[0]?.id)) {
  if (Date.now() > deliveryDeadline) throw new Error('no webhook delivery recorded within 30 s');
  await new Promise((r) => setTimeout(r, 50));
}
const event: string = (await api(ts, 'GET', `/apps/${app}/webhook-events`, key)).json[0].id;
/** Each route's request; fresh resources where a success would consume them. */
const CASES: Record<string, () => Promise<{ path: string; body?: unknown }>> = {
  'GET /account': async () => ({ path: '/account' }),
  'GET /account/rate-limits': async () => ({ path: '/account/rate-limits' }),
  'POST /apps': async () => ({ path: '/apps', body: { name: unique('mx') } }),
  'GET /apps': async () => ({ path: '/apps' }),
  'GET /apps/:app': async () => ({ path: `/apps/${app}` }),
  'DELETE /apps/:app': async () => ({ path: `/apps/${await created('/apps', { name: unique('del') })}` }),
  'PATCH /apps/:app': async () => ({ path: `/apps/${app}`, body: { maintenance: false } }),
  'GET /apps/:app/config-vars': async () => ({ path: `/apps/${app}/config-vars` }),
  'PATCH /apps/:app/config-vars': async () => ({ path: `/apps/${app}/config-vars`, body: { MATRIX: 'yes' } }),
  'GET /apps/:app/features': async () => ({ path: `/apps/${app}/features` }),
  'GET /apps/:app/features/:feature': async () => ({ path: `/apps/${app}/features/runtime-new-layer-extract` }),
  'PATCH /apps/:app/features/:feature': async () => ({ path: `/apps/${app}/features/runtime-new-layer-extract`, body: { enabled: true } }),
  'GET /teams': async () => ({ path: '/teams' }),
  'POST /teams': async () => ({ path: '/teams', body: { name: unique('team') } }),
  'GET /teams/:team': async () => ({ path: '/teams/matrix-team' }),
  'GET /teams/:team/preferences': async () => ({ path: '/teams/matrix-team/preferences' }),
  'PATCH /teams/:team/preferences': async () => ({ path: '/teams/matrix-team/preferences', body: { 'third-party-oauth-access': true } }),
  'GET /teams/:team/members': async () => ({ path: '/teams/matrix-team/members' }),
  'PUT /teams/:team/members': async () => ({ path: '/teams/matrix-team/members', body: { email: 'matrix-member@example.com', role: 'member' } }),
  'DELETE /teams/:team/members/:member': async () => { await addMember(); return { path: '/teams/matrix-team/members/matrix-member@example.com' }; },
  'GET /teams/:team/apps': async () => ({ path: '/teams/matrix-team/apps' }),
  'POST /teams/:team/authorizations': async () => ({ path: '/teams/matrix-team/authorizations', body: { description: 'matrix' } }),
  'GET /teams/:team/authorizations': async () => ({ path: '/teams/matrix-team/authorizations' }),
  'GET /account/features': async () => ({ path: '/account/features' }),
  'GET /account/features/:feature': async () => ({ path: '/account/features/some-feature' }),
  'PATCH /account/features/:feature': async () => ({ path: '/account/features/some-feature', body: { enabled: true } }),
  'GET /addons': async () => ({ path: '/addons' }),
  'GET /apps/:app/addons': async () => ({ path: `/apps/${app}/addons` }),
  'GET /apps/:app/collaborators': async () => ({ path: `/apps/${app}/collaborators` }),
  'GET /apps/:app/pipeline-couplings': async () => ({ path: `/apps/${app}/pipeline-couplings` }),
  'GET /apps/:app/dynos': async () => ({ path: `/apps/${app}/dynos` }),
  'DELETE /apps/:app/dynos': async () => ({ path: `/apps/${app}/dynos` }),
  'GET /apps/:app/dynos/:dyno': async () => ({ path: `/apps/${app}/dynos/web.1` }),
  'DELETE /apps/:app/dynos/:dyno': async () => ({ path: `/apps/${app}/dynos/web.1` }),
  'POST /apps/:app/dynos/:dyno/actions/stop': async () => ({ path: `/apps/${app}/dynos/web.1/actions/stop` }),
  'DELETE /apps/:app/formations/:type': async () => ({ path: `/apps/${app}/formations/web` }),
  'POST /apps/:app/formations/:type/actions/stop': async () => ({ path: `/apps/${app}/formations/web/actions/stop` }),
  'GET /apps/:app/releases/:release/config-vars': async () => ({ path: `/apps/${app}/releases/1/config-vars` }),
  'GET /teams/:team/features': async () => ({ path: '/teams/matrix-team/features' }),
  'GET /users/:user/apps': async () => ({ path: '/users/~/apps' }),
  'GET /apps/:app/formation': async () => ({ path: `/apps/${app}/formation` }),
  'PATCH /apps/:app/formation': async () => ({ path: `/apps/${app}/formation`, body: { updates: [{ type: 'web', quantity: 1 }] } }),
  'GET /apps/:app/formation/:type': async () => ({ path: `/apps/${app}/formation/web` }),
  'PATCH /apps/:app/formation/:type': async () => ({ path: `/apps/${app}/formation/web`, body: { quantity: 2 } }),
  'DELETE /apps/:app/formation/:type': async () => ({ path: `/apps/${app}/formation/${await seedFormation(unique('old'))}` }),
  'GET /apps/:app/releases': async () => ({ path: `/apps/${app}/releases` }),
  'POST /apps/:app/releases': async () => ({ path: `/apps/${app}/releases`, body: { release: 1 } }),
  'GET /apps/:app/releases/:release': async () => ({ path: `/apps/${app}/releases/1` }),
  'POST /oauth/authorizations': async () => ({ path: '/oauth/authorizations', body: { description: 'matrix' } }),
  'GET /oauth/authorizations': async () => ({ path: '/oauth/authorizations' }),
  'GET /oauth/authorizations/:id': async () => ({ path: `/oauth/authorizations/${authz}` }),
  'PATCH /oauth/authorizations/:id': async () => ({ path: `/oauth/authorizations/${authz}`, body: { description: 'patched' } }),
  'DELETE /oauth/authorizations/:id': async () => ({ path: `/oauth/authorizations/${await created('/oauth/authorizations', {})}` }),
  'POST /oauth/authorizations/:id/actions/regenerate-tokens': async () => ({ path: `/oauth/authorizations/${authz}/actions/regenerate-tokens` }),
  'POST /oauth/clients': async () => ({ path: '/oauth/clients', body: { name: 'c', redirect_uri: 'https://c.example/cb' } }),
  'GET /oauth/clients': async () => ({ path: '/oauth/clients' }),
  'GET /oauth/clients/:id': async () => ({ path: `/oauth/clients/${client}` }),
  'PATCH /oauth/clients/:id': async () => ({ path: `/oauth/clients/${client}`, body: { name: 'patched' } }),
  'DELETE /oauth/clients/:id': async () => ({ path: `/oauth/clients/${await created('/oauth/clients', { name: 'd', redirect_uri: 'https://d.example/cb' })}` }),
  'POST /oauth/clients/:id/actions/rotate-credentials': async () => ({ path: `/oauth/clients/${client}/actions/rotate-credentials` }),
  'POST /apps/:app/webhooks': async () => ({ path: `/apps/${await created('/apps', { name: unique('wh') })}/webhooks`, body: { include: ['api:app'], level: 'sync', url: 'https://hooks.invalid/a' } }),
  'GET /apps/:app/webhooks': async () => ({ path: `/apps/${app}/webhooks` }),
  'GET /apps/:app/webhooks/:webhook': async () => ({ path: `/apps/${app}/webhooks/${webhook}` }),
  'PATCH /apps/:app/webhooks/:webhook': async () => ({ path: `/apps/${app}/webhooks/${webhook}`, body: { level: 'notify' } }),
  'DELETE /apps/:app/webhooks/:webhook': async () => {
    const other = await created('/apps', { name: unique('whd') });
    return { path: `/apps/${other}/webhooks/${await webhookOn(other)}` };
  },
  'GET /apps/:app/webhook-deliveries': async () => ({ path: `/apps/${app}/webhook-deliveries` }),
  'GET /apps/:app/webhook-deliveries/:delivery': async () => ({ path: `/apps/${app}/webhook-deliveries/${delivery}` }),
  'GET /apps/:app/webhook-events': async () => ({ path: `/apps/${app}/webhook-events` }),
  'GET /apps/:app/webhook-events/:event': async () => ({ path: `/apps/${app}/webhook-events/${event}` }),
};

/** Routes whose allowed answer is always 404 not_found (nothing of the kind exists here). */
const ALWAYS_NOT_FOUND = new Set(['GET /account/features/:feature', 'PATCH /account/features/:feature', 'GET /apps/:app/pipeline-couplings']);

// Tokens: one valid, one revoked, one expired per scope, all of the operator's account.
const tokens: Record<string, Record<'valid' | 'revoked' | 'expired', string>> = {};
for (const scope of SCOPES) {
  const mk = async (extra: object) => (await api(ts, 'POST', '/oauth/authorizations', key, { scope: [scope], description: `matrix ${scope}`, ...extra })).json;
  const valid = await mk({});
  const revoked = await mk({});
  const expired = await mk({ expires_in: 60 });
  if ((await api(ts, 'DELETE', `/oauth/authorizations/${revoked.id}`, key)).status !== 200) throw new Error('revoke failed');
  tokens[scope] = { valid: valid.access_token.token, revoked: revoked.access_token.token, expired: expired.access_token.token };
}
ts.clock.advance(61_000);

// (All set-up above is awaited before the first subtest: tap ends the root test when its queue empties.)
t.test('every route has a matrix case', async (t) => {
  // A route added to API_ROUTES needs a request here (fresh resources where success consumes them).
  t.same(API_ROUTES.map((r) => `${r.method} ${r.path}`).filter((k) => !(k in CASES)), [], 'routes of API_ROUTES without a matrix case in CASES');
});


for (const route of API_ROUTES) {
  t.test(`${route.method} ${route.path}`, async (t) => {
    for (const scope of SCOPES) {
      for (const state of ['valid', 'revoked', 'expired'] as const) {
        const { path, body } = await CASES[`${route.method} ${route.path}`]!();
        const r = await api(ts, route.method, path, tokens[scope]![state], body);
        const label = `${scope} ${state} → ${r.status}`;
        t.not(r.status >= 500, true, `${label}: no 5xx`);
        if (state !== 'valid') {
          t.equal(r.status, 401, label);
          t.equal(r.json?.id, 'unauthorized', label);
          continue;
        }
        const allowed = route.access === 'public' || route.access === 'token' || allows([scope], route.access);
        if (allowed && ALWAYS_NOT_FOUND.has(`${route.method} ${route.path}`)) {
          t.equal(r.status, 404, `${label}: allowed, and answered not found`);
          t.equal(r.json.id, 'not_found');
        } else if (allowed) {
          t.ok(r.status >= 200 && r.status < 300, `${label}: allowed`);
        } else {
          t.equal(r.status, 403, `${label}: denied`);
          t.equal(r.json.id, 'forbidden');
          t.match(r.json.message, /it needs the/, 'names the scope needed');
        }
      }
    }
  });
}

t.test('a revoked or expired token changes nothing, a denied one neither', async (t) => {
  const before = (await api(ts, 'GET', '/apps', key)).json.length;
  for (const token of [tokens.read!.valid, tokens.global!.revoked, tokens.global!.expired]) {
    await api(ts, 'POST', '/apps', token, { name: unique('never') });
  }
  t.equal((await api(ts, 'GET', '/apps', key)).json.length, before);
});

t.test('no credentials: 401 except public client info; Basic password refused on create', async (t) => {
  for (const route of API_ROUTES) {
    const { path, body } = await CASES[`${route.method} ${route.path}`]!();
    const r = await api(ts, route.method, path, null, body);
    t.equal(r.status, route.access === 'public' ? 200 : 401, `${route.method} ${route.path}`);
  }
  const pw = await http('POST', `${ts.api}/oauth/authorizations`, { headers: { ...basic(ts.operator.email, ts.operator.password), 'content-type': 'application/json' }, body: '{}' });
  t.equal(pw.status, 401);
  t.match(pw.json.message, /second factor is mandatory/);
});
