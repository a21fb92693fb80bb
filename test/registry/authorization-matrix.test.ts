/**
 * The registry's authorization matrix (docs/rules.md Authentication 8-11; docs/architecture.md
 * "Registry routing"): every route of REGISTRY_ROUTES × every kind of caller, through the real
 * HTTP interface of the registry host (session routes through the upload host, where their
 * Locations point). A route's declared action decides the answer: allowed (the route's success
 * status), 403 DENIED (404 without a body on HEAD), or 401 with its challenge. The callers tell
 * every action apart: a read-scope token (pull only), a registry token for pull and one for
 * pull,push (push vs delete), no credentials (the challenge names the route's action). A route
 * added to the table without a case here fails this test.
 *
 * The expected answers follow REQUIRED below, not the table's own `action`. How this was checked
 * to fail: with `DELETE /v2/:name/manifests/:reference` declared `push` (the pull,push registry
 * token got 202 instead of 401 insufficient_scope), `GET /v2/:name/tags/list` declared `check`
 * (another account and the blocked third-party token got 200 instead of 403), and
 * `HEAD /v2/:name/referrers/:digest` dispatched without admission (no credentials and the revoked
 * token got 200 instead of 401).
 */
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { REGISTRY_ROUTES, type RegistryRoute } from '../../server/registry/routes.js';
import type { RouteAction } from '../../server/registry/admission.js';
import { api, createAccount, registerClient } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, bearer, errCode, http, type Reply } from '../helpers/http.js';
import { buildImage, sha256 } from '../helpers/image.js';
import { pushBlob, pushBuiltImage, startUpload, type Target } from '../helpers/registry.js';
import { tempDir } from '../helpers/server.js';
import { createAuthorizationInTransaction } from '../../engine/identity/authorizations.js';

const ts = await startInProcess();
const tmp = tempDir('slipway-matrix-');
t.teardown(async () => { await ts.stop(); tmp.cleanup(); });
const admin = ts.operator.apiKey;
const reg = ts.server.urls.registry;
const REPO = 'mxt/web';
const me: Target = { registry: reg, auth: basic('_', admin) };

async function ok(r: Promise<Reply>, status: number): Promise<any> {
  const res = await r;
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return res.json;
}

/** A tiny image, distinct per call, pushed by the operator. */
async function pushImage(tag: string) {
  const img = await buildImage(join(tmp.dir, randomBytes(4).toString('hex')), { layers: [{ files: { 'id.txt': randomBytes(8).toString('hex') } }] });
  return pushBuiltImage(me, REPO, tag, img);
}

// A team app the operator administers, with one pushed image.
await ok(api(ts, 'POST', '/teams', admin, { name: 'mxteam' }), 201);
await ok(api(ts, 'POST', '/apps', admin, { name: 'mxt', team: 'mxteam' }), 201);
const base = await pushImage('v1');

// The callers.
const authorization = async (scope: string) => (await ok(api(ts, 'POST', '/oauth/authorizations', admin, { scope: [scope], description: `matrix ${scope}` }), 201));
const readScope = (await authorization('read')).access_token.token as string;
const globalScope = (await authorization('global')).access_token.token as string;
const revokedAuth = await authorization('global');
await ok(api(ts, 'DELETE', `/oauth/authorizations/${revokedAuth.id}`, admin), 200);
const other = await createAccount(ts, 'mx-other@example.com');
const teamToken = (await ok(api(ts, 'POST', '/teams/mxteam/authorizations', admin, { description: 'matrix' }), 201)).access_token.token as string;
const thirdPartyClient = await registerClient(ts, other.apiKey, 'Matrix integration');
const { store } = ts.server;
const thirdParty = await store.metadata.transact((tx) => createAuthorizationInTransaction(tx, {
  kind: 'web', accountId: ts.server.bootstrap!.account.id, description: 'third party', scope: ['global'], clientId: thirdPartyClient.id, accessTokenTtlMs: 8 * 3600_000, withRefreshToken: true,
}, ts.clock.now())).then((i) => i.accessToken.token);
await ok(api(ts, 'PATCH', '/teams/mxteam/preferences', admin, { 'third-party-oauth-access': false }), 200);
const registryToken = async (actions: string) => (await ok(http('GET', `${reg}/token?scope=repository:${REPO}:${actions}`, { headers: basic('_', admin) }), 200)).token as string;
const pullToken = await registryToken('pull');
const pushToken = await registryToken('pull,push');

type Outcome = 'allowed' | 'denied' | 'challenge' | 'insufficient';
const REPOSITORY_ACTIONS: readonly RouteAction[] = ['pull', 'push', 'delete'];
const onRepository = (action: RouteAction) => REPOSITORY_ACTIONS.includes(action);

/** Each caller: its credentials and the outcome of a route declaring `action`. */
const CALLERS: Record<string, { headers: Record<string, string>; outcome(action: RouteAction): Outcome }> = {
  'no credentials': { headers: {}, outcome: () => 'challenge' },
  'revoked token': { headers: basic('_', revokedAuth.access_token.token), outcome: () => 'challenge' },
  'read-scope token (pull only)': { headers: basic('_', readScope), outcome: (a) => (a === 'push' || a === 'delete' ? 'denied' : 'allowed') },
  'global-scope token (push)': { headers: bearer(globalScope), outcome: () => 'allowed' },
  'another account': { headers: basic('_', other.apiKey), outcome: (a) => (onRepository(a) ? 'denied' : 'allowed') },
  'team token': { headers: basic('_', teamToken), outcome: () => 'allowed' },
  'third-party token, team access off': { headers: bearer(thirdParty), outcome: (a) => (onRepository(a) ? 'denied' : 'allowed') },
  'registry token for pull': {
    headers: bearer(pullToken),
    outcome: (a) => (a === 'token' ? 'challenge' : a === 'push' || a === 'delete' ? 'insufficient' : 'allowed'),
  },
  'registry token for pull,push': {
    headers: bearer(pushToken),
    outcome: (a) => (a === 'token' ? 'challenge' : a === 'delete' ? 'insufficient' : 'allowed'),
  },
};

/** A request to a route and its success status; set up afresh where a success consumes it. */
interface Case { url: string; status: number; headers?: Record<string, string>; body?: Buffer | string }

/** A session opened by the operator: its upload-host URL without the `_state` capability, and with it. */
async function openSession(): Promise<{ bare: string; withState: string }> {
  const location = await startUpload(me, REPO);
  const u = new URL(location);
  return { withState: location, bare: `${u.origin}${u.pathname}` };
}
let serial = 0;
const chunk = () => Buffer.from(`chunk ${process.pid} ${++serial}`);

const CASES: Record<string, () => Promise<Case>> = {
  'GET /token': async () => ({ url: `${reg}/token?scope=repository:${REPO}:pull`, status: 200 }),
  'HEAD /token': async () => ({ url: `${reg}/token?scope=repository:${REPO}:pull`, status: 200 }),
  'GET /v2/': async () => ({ url: `${reg}/v2/`, status: 200 }),
  'HEAD /v2/': async () => ({ url: `${reg}/v2/`, status: 200 }),
  'GET /v2/_catalog': async () => ({ url: `${reg}/v2/_catalog`, status: 200 }),
  'HEAD /v2/_catalog': async () => ({ url: `${reg}/v2/_catalog`, status: 200 }),
  'GET /v2/:name/tags/list': async () => ({ url: `${reg}/v2/${REPO}/tags/list`, status: 200 }),
  'HEAD /v2/:name/tags/list': async () => ({ url: `${reg}/v2/${REPO}/tags/list`, status: 200 }),
  'GET /v2/:name/manifests/:reference': async () => ({ url: `${reg}/v2/${REPO}/manifests/v1`, status: 200 }),
  'HEAD /v2/:name/manifests/:reference': async () => ({ url: `${reg}/v2/${REPO}/manifests/${base.manifestDigest}`, status: 200 }),
  'PUT /v2/:name/manifests/:reference': async () => ({
    url: `${reg}/v2/${REPO}/manifests/t${++serial}`, status: 201, body: base.manifest,
    headers: { 'content-type': 'application/vnd.docker.distribution.manifest.v2+json' },
  }),
  'DELETE /v2/:name/manifests/:reference': async () => ({ url: `${reg}/v2/${REPO}/manifests/${(await pushImage(`d${++serial}`)).manifestDigest}`, status: 202 }),
  'GET /v2/:name/blobs/:digest': async () => ({ url: `${reg}/v2/${REPO}/blobs/${base.configDigest}`, status: 200 }),
  'HEAD /v2/:name/blobs/:digest': async () => ({ url: `${reg}/v2/${REPO}/blobs/${base.layers[0]!.digest}`, status: 200 }),
  'DELETE /v2/:name/blobs/:digest': async () => {
    const bytes = chunk();
    if ((await pushBlob(me, REPO, bytes)).status !== 201) throw new Error('blob push failed');
    return { url: `${reg}/v2/${REPO}/blobs/${sha256(bytes)}`, status: 202 };
  },
  'POST /v2/:name/blobs/uploads/': async () => ({ url: `${reg}/v2/${REPO}/blobs/uploads/`, status: 202 }),
  'GET /v2/:name/blobs/uploads/:session': async () => ({ url: (await openSession()).bare, status: 204 }),
  'PATCH /v2/:name/blobs/uploads/:session': async () => ({ url: (await openSession()).bare, status: 202, body: chunk(), headers: { 'content-type': 'application/octet-stream' } }),
  'PUT /v2/:name/blobs/uploads/:session': async () => {
    const bytes = chunk();
    return { url: `${(await openSession()).bare}?digest=${sha256(bytes)}`, status: 201, body: bytes, headers: { 'content-type': 'application/octet-stream' } };
  },
  'DELETE /v2/:name/blobs/uploads/:session': async () => ({ url: (await openSession()).bare, status: 204 }),
  'GET /v2/:name/referrers/:digest': async () => ({ url: `${reg}/v2/${REPO}/referrers/${base.manifestDigest}`, status: 200 }),
  'HEAD /v2/:name/referrers/:digest': async () => ({ url: `${reg}/v2/${REPO}/referrers/${base.manifestDigest}`, status: 200 }),
};

const routeKey = (r: RegistryRoute) => `${r.method} ${r.pattern}`;

/**
 * What each route must require, stated here independently of the table (distribution token
 * scopes: reads pull, writes push, deletes delete; upload sessions are part of a push), so a
 * wrong action in REGISTRY_ROUTES shows as a wrong answer on the wire.
 */
const REQUIRED: Record<string, RouteAction> = {
  'GET /token': 'token', 'HEAD /token': 'token',
  'GET /v2/': 'check', 'HEAD /v2/': 'check',
  'GET /v2/_catalog': 'catalog', 'HEAD /v2/_catalog': 'catalog',
  'GET /v2/:name/tags/list': 'pull', 'HEAD /v2/:name/tags/list': 'pull',
  'GET /v2/:name/manifests/:reference': 'pull', 'HEAD /v2/:name/manifests/:reference': 'pull',
  'PUT /v2/:name/manifests/:reference': 'push', 'DELETE /v2/:name/manifests/:reference': 'delete',
  'GET /v2/:name/blobs/:digest': 'pull', 'HEAD /v2/:name/blobs/:digest': 'pull', 'DELETE /v2/:name/blobs/:digest': 'delete',
  'POST /v2/:name/blobs/uploads/': 'push',
  'GET /v2/:name/blobs/uploads/:session': 'push', 'PATCH /v2/:name/blobs/uploads/:session': 'push',
  'PUT /v2/:name/blobs/uploads/:session': 'push', 'DELETE /v2/:name/blobs/uploads/:session': 'push',
  'GET /v2/:name/referrers/:digest': 'pull', 'HEAD /v2/:name/referrers/:digest': 'pull',
};

/** The challenge scope a route's refusal names (access.ts `authorize`; the catalog's own). */
function challengeScope(action: RouteAction): string | undefined {
  if (action === 'catalog') return 'registry:catalog:*';
  if (!onRepository(action)) return undefined;
  return `repository:${REPO}:${action === 'push' ? 'pull,push' : action}`;
}

/** Checks one answer against the expected outcome. */
function expect(t: Test, route: RegistryRoute, action: RouteAction, c: Case, r: Reply, outcome: Outcome, label: string): void {
  const head = route.method === 'HEAD';
  const challenge = r.headers['www-authenticate'] ?? '';
  switch (outcome) {
    case 'allowed':
      t.equal(r.status, c.status, `${label}: allowed`);
      break;
    case 'denied':
      t.equal(r.status, head ? 404 : 403, `${label}: denied`);
      if (!head) t.equal(errCode(r), 'DENIED', `${label}: DENIED`);
      break;
    case 'challenge':
    case 'insufficient': {
      t.equal(r.status, 401, `${label}: challenged`);
      if (!head) t.equal(errCode(r), 'UNAUTHORIZED', `${label}: UNAUTHORIZED`);
      t.match(challenge, /^Bearer realm="[^"]+\/token",service="[^"]+"/, `${label}: challenge`);
      t.equal(challenge.includes('error="insufficient_scope"'), outcome === 'insufficient', `${label}: insufficient_scope only for a registry token lacking the action`);
      const scope = challengeScope(action);
      if (outcome === 'insufficient' || label.startsWith('no credentials')) {
        t.equal(/scope="([^"]*)"/.exec(challenge)?.[1], scope, `${label}: the challenge names the route's action`);
      }
      break;
    }
  }
}

// (All set-up above is awaited before the first subtest: tap ends the root test when its queue empties.)
t.test('every route has a matrix case', async (t) => {
  t.same(REGISTRY_ROUTES.map(routeKey).filter((k) => !(k in CASES) || !(k in REQUIRED)), [], 'routes of REGISTRY_ROUTES without a case in CASES and REQUIRED');
});

for (const route of REGISTRY_ROUTES) {
  t.test(routeKey(route), async (t) => {
    const action = REQUIRED[routeKey(route)]!;
    for (const [name, caller] of Object.entries(CALLERS)) {
      const c = await CASES[routeKey(route)]!();
      const r = await http(route.method, c.url, { headers: { ...c.headers, ...caller.headers }, body: c.body });
      expect(t, route, action, c, r, caller.outcome(action), `${name} → ${r.status}`);
    }
  });
}

t.test('session routes: their `_state` capability admits them without credentials, only for their own session', async (t) => {
  const sessionRoutes = REGISTRY_ROUTES.filter((r) => r.session);
  t.same(sessionRoutes.map((r) => r.method).sort(), ['DELETE', 'GET', 'PATCH', 'PUT'], 'the upload-session routes are flagged');
  for (const route of sessionRoutes) {
    const c = await CASES[routeKey(route)]!();
    const own = await openSession();
    const foreign = await openSession();
    const query = (s: { withState: string }) => new URL(s.withState).search.slice(1);
    const url = (state: string) => c.url.replace(/^[^?]+/, own.bare) + (c.url.includes('?') ? '&' : '?') + state;
    const admitted = await http(route.method, url(query(own)), { headers: c.headers, body: c.body });
    t.equal(admitted.status, c.status, `${route.method} with the session's _state`);
    const refused = await http(route.method, url(query(foreign)), { headers: c.headers, body: c.body });
    t.equal(refused.status, 401, `${route.method} with another session's _state`);
  }
});
