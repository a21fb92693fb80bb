/**
 * The whole web flow driven by a real OAuth client library (simple-oauth2) against a running
 * server, with the form walker playing the user (sign-in with password and TOTP, consent):
 * state echoed, token format and response shape, API call, refresh (201), reused code,
 * wrong secret, revoked authorization, expiry after 8 hours with refresh still working.
 */
import t from 'tap';
import { AuthorizationCode } from 'simple-oauth2';
import { api, Browser, registerClient, walkAuthorization } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { http } from '../helpers/http.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const client = await registerClient(ts, ts.operator.apiKey, 'Example CI', 'http://127.0.0.1:9/callback?keep=1');

function oauthClient(secret = client.secret, authorizationMethod: 'body' | 'header' = 'body') {
  return new AuthorizationCode({
    client: { id: client.id, secret },
    auth: { tokenHost: ts.auth, tokenPath: '/oauth/token', authorizePath: '/oauth/authorize' },
    options: { authorizationMethod },
  });
}

/** Runs the browser part of the flow and returns the redirect the client receives. */
async function authorize(scope: string, state: string, browser = new Browser(ts.auth), decision: 'allow' | 'deny' = 'allow') {
  const url = oauthClient().authorizeURL({ redirect_uri: client.redirectUri, scope, state });
  return walkAuthorization(browser, url, ts.operator, ts.clock, decision);
}

/** The RFC 6749 §5.2 error of a rejected simple-oauth2 call. */
async function oauthError(p: Promise<unknown>): Promise<{ status: number; error: string; headers: Record<string, string> }> {
  try {
    await p;
  } catch (e) {
    const boom = e as { output: { statusCode: number }; data: { payload: { error: string }; res: { headers: Record<string, string> } } };
    return { status: boom.output.statusCode, error: boom.data.payload.error, headers: boom.data.res.headers };
  }
  throw new Error('expected the token request to fail');
}

t.test('code flow: state, token shape, API call, refresh', async (t) => {
  const state = 'st8-' + 'x'.repeat(20) + ' /?&=';
  const back = await authorize('read identity', state);
  t.equal(back.origin + back.pathname, 'http://127.0.0.1:9/callback', 'redirected to the registered URI');
  t.equal(back.searchParams.get('keep'), '1', 'the redirect URI keeps its own query');
  t.equal(back.searchParams.get('state'), state, 'state echoed unchanged');
  const code = back.searchParams.get('code')!;
  t.match(code, /^[A-Za-z0-9_-]{43}$/);

  const token = await oauthClient().getToken({ code, redirect_uri: client.redirectUri });
  const body = token.token as Record<string, unknown>;
  t.match(body.access_token, /^SVC-[A-Za-z0-9_-]{61}$/, 'access token: SVC- + 61 URL-safe characters');
  t.equal((body.access_token as string).length, 65);
  t.equal(body.expires_in, 28799);
  t.equal(body.token_type, 'Bearer');
  t.match(body.refresh_token, /^SVC-[A-Za-z0-9_-]{61}$/);
  t.equal(body.user_id, ts.server.bootstrap!.account.id);
  t.type(body.session_nonce, 'string');
  t.same(Object.keys(body).filter((k) => k !== 'expires_at').sort(), ['access_token', 'expires_in', 'refresh_token', 'session_nonce', 'token_type', 'user_id']);

  const me = await api(ts, 'GET', '/account', body.access_token as string);
  t.equal(me.status, 200, 'identity scope reads the account');
  t.equal(me.json.email, ts.operator.email);
  t.equal((await api(ts, 'GET', '/apps', body.access_token as string)).status, 200, 'read scope lists apps');
  const denied = await api(ts, 'POST', '/apps', body.access_token as string, { name: 'nope-app' });
  t.equal(denied.status, 403, 'read scope cannot create apps');
  t.equal(denied.json.id, 'forbidden');
  t.match(denied.json.message, /needs the scope write, write-protected or global/);

  const refreshed = await token.refresh();
  const r = refreshed.token as Record<string, unknown>;
  t.not(r.access_token, body.access_token, 'a new access token');
  t.equal(r.refresh_token, body.refresh_token, 'the same refresh token');
  t.equal(r.expires_in, 28799);
  t.equal((await api(ts, 'GET', '/account', r.access_token as string)).status, 200, 'new token works');
  t.equal((await api(ts, 'GET', '/account', body.access_token as string)).status, 401, 'the previous access token is replaced');
});

t.test('refresh answers 201 with ETag, Last-Modified, RateLimit-Remaining and no-store', async (t) => {
  const back = await authorize('identity', 's1');
  const token = await oauthClient().getToken({ code: back.searchParams.get('code')!, redirect_uri: client.redirectUri });
  const raw = await http('POST', `${ts.auth}/oauth/token`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token.token.refresh_token as string, client_secret: client.secret }).toString(),
  });
  t.equal(raw.status, 201);
  t.equal(raw.headers['content-type'], 'application/json;charset=utf-8');
  t.match(raw.headers.etag, /^"[0-9a-f]{32}"$/);
  t.ok(Date.parse(raw.headers['last-modified']!) > 0);
  t.match(raw.headers['ratelimit-remaining'], /^\d+$/);
  t.equal(raw.headers['cache-control'], 'no-store');
  t.equal(raw.json.refresh_token, token.token.refresh_token);
});

t.test('code exchange: only client_secret (the spec form) and HTTP Basic both work', async (t) => {
  // The spec's request carries no redirect_uri, so neither does the token request (RFC 6749 §4.1.3).
  const plain = `${ts.auth}/oauth/authorize?${new URLSearchParams({ client_id: client.id, response_type: 'code', scope: 'identity', state: 's2' })}`;
  const back = await walkAuthorization(new Browser(ts.auth), plain, ts.operator, ts.clock);
  const minimal = await http('POST', `${ts.auth}/oauth/token`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: back.searchParams.get('code')!, client_secret: client.secret }).toString(),
  });
  t.equal(minimal.status, 200);
  t.equal(minimal.headers['content-type'], 'application/json;charset=utf-8');
  t.equal(minimal.headers['cache-control'], 'no-store');
  const back2 = await authorize('identity', 's3');
  const viaBasic = await oauthClient(client.secret, 'header').getToken({ code: back2.searchParams.get('code')!, redirect_uri: client.redirectUri });
  t.match(viaBasic.token.access_token, /^SVC-/);
});

t.test('a reused code fails and revokes what it issued', async (t) => {
  const back = await authorize('identity', 's4');
  const code = back.searchParams.get('code')!;
  const first = await oauthClient().getToken({ code, redirect_uri: client.redirectUri });
  t.equal((await api(ts, 'GET', '/account', first.token.access_token as string)).status, 200);
  const again = await oauthError(oauthClient().getToken({ code, redirect_uri: client.redirectUri }));
  t.equal(again.status, 400);
  t.equal(again.error, 'invalid_grant');
  t.equal(again.headers['cache-control'], 'no-store');
  t.equal((await api(ts, 'GET', '/account', first.token.access_token as string)).status, 401, 'the first exchange\'s access token is revoked');
  t.equal((await oauthError(first.refresh())).error, 'invalid_grant', 'and its refresh token');
});

t.test('a wrong client secret fails and leaves the code usable', async (t) => {
  const back = await authorize('identity', 's5');
  const code = back.searchParams.get('code')!;
  const wrong = await oauthError(oauthClient('not-the-secret').getToken({ code, redirect_uri: client.redirectUri }));
  t.equal(wrong.status, 401);
  t.equal(wrong.error, 'invalid_client');
  t.match(wrong.headers['www-authenticate'], /^Basic /);
  const wrongBasic = await oauthError(oauthClient('not-the-secret', 'header').getToken({ code, redirect_uri: client.redirectUri }));
  t.equal(wrongBasic.error, 'invalid_client');
  const right = await oauthClient().getToken({ code, redirect_uri: client.redirectUri });
  t.match(right.token.access_token, /^SVC-/, 'the legitimate client still gets its tokens');
  const otherClient = new AuthorizationCode({
    client: { id: client.id, secret: 'wrong' },
    auth: { tokenHost: ts.auth, tokenPath: '/oauth/token' },
    options: { authorizationMethod: 'body' },
  });
  const refreshWrong = await oauthError(otherClient.createToken(right.token).refresh());
  t.equal(refreshWrong.error, 'invalid_client', 'refresh with a wrong secret fails too');
});

t.test('a revoked authorization\'s tokens fail at once', async (t) => {
  const back = await authorize('identity', 's6');
  const token = await oauthClient().getToken({ code: back.searchParams.get('code')!, redirect_uri: client.redirectUri });
  const access = token.token.access_token as string;
  const list = await api(ts, 'GET', '/oauth/authorizations', ts.operator.apiKey);
  const mine = list.json.filter((a: { client: { id: string } | null }) => a.client?.id === client.id);
  t.ok(mine.length >= 1, 'web authorizations are listed with their client');
  const target = mine.find((a: { access_token: { token: string } }) => a.access_token.token.endsWith(access.slice(-4)))!;
  t.equal(target.access_token.token, 'SVC-**********' + access.slice(-4), 'listed tokens are redacted');
  const del = await api(ts, 'DELETE', `/oauth/authorizations/${target.id}`, ts.operator.apiKey);
  t.equal(del.status, 200);
  t.equal(del.json.id, target.id);
  t.equal((await api(ts, 'GET', '/account', access)).status, 401, 'access token refused');
  t.equal((await oauthError(token.refresh())).error, 'invalid_grant', 'refresh token refused');
});

t.test('after 8 hours the access token expires and refresh still works', async (t) => {
  const back = await authorize('identity', 's7');
  const token = await oauthClient().getToken({ code: back.searchParams.get('code')!, redirect_uri: client.redirectUri });
  const access = token.token.access_token as string;
  ts.clock.advance(8 * 3600_000 - 1000);
  t.equal((await api(ts, 'GET', '/account', access)).status, 200, 'valid one second before 8 h');
  ts.clock.advance(1000);
  const expired = await api(ts, 'GET', '/account', access);
  t.equal(expired.status, 401, 'expired at 8 h');
  t.equal(expired.json.id, 'unauthorized');
  ts.clock.advance(30 * 24 * 3600_000);
  const refreshed = await token.refresh();
  t.equal(refreshed.token.expires_in, 28799);
  t.equal((await api(ts, 'GET', '/account', refreshed.token.access_token as string)).status, 200, 'refresh tokens do not expire');
});

t.test('denial and unsupported response types go back to the client', async (t) => {
  const denied = await authorize('identity', 'no-thanks', new Browser(ts.auth), 'deny');
  t.equal(denied.searchParams.get('error'), 'access_denied');
  t.equal(denied.searchParams.get('state'), 'no-thanks');
  t.notOk(denied.searchParams.has('code'));
});

t.test('race: concurrent exchanges of one code never both get tokens', async (t) => {
  // Random start offsets put the exchanges before, during and after each other's transaction;
  // the code's single use is decided inside one serializable transaction (authorization-codes.ts).
  const browser = new Browser(ts.auth);
  for (let round = 0; round < 12; round++) {
    const back = await authorize('identity', `race-${round}`, browser);
    const code = back.searchParams.get('code')!;
    const outcomes = await Promise.all([0, 1, 2].map(async () => {
      // Deliberate random delay (0–4 ms): it is what varies the interleaving.
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 5)));
      try {
        return { ok: true as const, token: (await oauthClient().getToken({ code, redirect_uri: client.redirectUri })).token.access_token as string };
      } catch (e) {
        return { ok: false as const, error: (e as { data?: { payload?: { error?: string } } }).data?.payload?.error };
      }
    }));
    const won = outcomes.filter((o) => o.ok);
    t.ok(won.length <= 1, `round ${round}: at most one exchange succeeds (${won.length})`);
    t.ok(outcomes.filter((o) => !o.ok).every((o) => o.error === 'invalid_grant'), `round ${round}: the others get invalid_grant`);
    if (won.length === 1 && won.length < outcomes.length) {
      // A replay revokes what the code issued, whichever order the transactions ran in.
      t.equal((await api(ts, 'GET', '/account', won[0]!.token!)).status, 401, `round ${round}: the winner's token is revoked by the replay`);
    }
  }
});
