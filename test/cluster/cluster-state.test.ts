/**
 * What must be cluster-wide is (issue "Every host works on every node"), proved with two nodes on
 * one real PostgreSQL, sharing one clock and one server key: a CLI browser login started on A
 * completes when the browser and the polls reach B (its token handed out once, however the polls
 * are spread); a dashboard form that shows a secret acts once across the nodes; a
 * second-factor code used on A is refused on B; failed sign-ins on both nodes add
 * up to one lockout; an authorization code is exchanged once across the nodes; a refresh on one
 * node ends the previous access token on the other; and the API rate-limit pool is one pool,
 * its `RateLimit-Remaining` exact across nodes, also under concurrent requests.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { startInProcess, TEST_EPOCH, type InProcessSlipway } from '../helpers/harness.js';
import { http, type Reply } from '../helpers/http.js';
import { api, Browser, createAccount, findForm, registerClient, signIn, walkAuthorization, type Credentials } from '../helpers/oauth.js';
import { ManualClock } from '../../engine/clock.js';
import { totpCode, TOTP_STEP_SECONDS } from '../../engine/identity/totp.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';

const skip = postgresSkip();

t.test('cluster-wide state', { skip }, async (t) => {
  const pg = await startPostgres();
  const metadata = () => PostgresMetadataStore.open({ connectionString: pg.connectionString });
  const clock = new ManualClock(TEST_EPOCH);
  const env = { SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64'), SLIPWAY_CLI_LOGIN_POLL_WAIT: '20', SLIPWAY_RATE_LIMIT_POOL: '10' };
  const a = await startInProcess({ metadata, clock, env });
  const b = await startInProcess({ metadata, clock, env });
  t.teardown(async () => { await a.stop(); await b.stop(); await pg.stop(); });
  const op = a.operator;

  await t.test('a CLI login started on A completes through B, its token handed out once', async (t) => {
    for (let round = 0; round < 4; round++) {
      clock.advance(60_000); // refills the operator's pool of 10
      const started = await http('POST', `${a.auth}/auth`, { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ description: `cluster login ${round}` }) });
      t.equal(started.status, 201);
      const s = started.json as { browser_url: string; cli_url: string; token: string };
      const poll = (n: InProcessSlipway) => http('GET', n.auth + s.cli_url, { headers: { authorization: `Bearer ${s.token}` } });
      // Polls already waiting on both nodes before the answer, one more of each after it.
      const waiting = [poll(a), poll(b)];
      const browser = new Browser(b.auth);
      t.equal((await signIn(browser, op, clock)).status, 303, 'signed in on B');
      const page = await browser.get(s.browser_url);
      t.equal(page.status, 200, 'B shows the confirmation page of a login started on A');
      const answered = await browser.post(s.browser_url, { ...findForm(page.text, s.browser_url).fields, decision: 'allow' });
      t.equal(answered.status, 200);
      await new Promise((r) => setTimeout(r, Math.random() * 300));
      const replies: Reply[] = await Promise.all([...waiting, poll(round % 2 ? a : b), poll(round % 2 ? b : a)]);
      const delivered = replies.filter((r) => r.status === 200);
      t.equal(delivered.length, 1, `round ${round}: exactly one poll of four, on two nodes, gets the token`);
      t.same(replies.filter((r) => r.status !== 200).map((r) => r.json.id), ['invalid_grant', 'invalid_grant', 'invalid_grant'], 'the others hear it was handed out');
      t.equal((await api(b, 'GET', '/account', delivered[0]!.json.access_token)).status, 200, 'the token works');
    }
  });

  await t.test('a second-factor code is single-use across the nodes', async (t) => {
    const who = await createAccount(a, 'totp-cluster@example.com');
    clock.advance(TOTP_STEP_SECONDS * 1000);
    const code = totpCode(who.totpSecret, clock.now());
    const post = async (n: InProcessSlipway) => {
      const browser = new Browser(n.auth);
      const form = findForm((await browser.get('/login')).text, '/login');
      return browser.post('/login', { ...form.fields, email: who.email, password: who.password, code });
    };
    t.equal((await post(a)).status, 303, 'the code signs in on A');
    t.equal((await post(b)).status, 401, 'the same code is refused on B');
  });

  await t.test('failed sign-ins on both nodes add up to one lockout', async (t) => {
    const who: Credentials = await createAccount(b, 'lockout-cluster@example.com');
    for (let i = 0; i < 5; i++) {
      const n = i % 2 ? b : a;
      const r = await signIn(new Browser(n.auth), who, clock, '', { password: 'wrong password' });
      t.equal(r.status, i < 4 ? 401 : 429, `failure ${i + 1} on ${n === a ? 'A' : 'B'}`);
    }
    for (const n of [a, b]) {
      const r = await signIn(new Browser(n.auth), who, clock);
      t.equal(r.status, 429, 'locked on every node, right credentials or not');
    }
  });

  await t.test('authorization codes and refresh across the nodes', async (t) => {
    const client = await registerClient(a, op.apiKey, 'Cluster client');
    const codeOn = async (n: InProcessSlipway) => {
      const url = `${n.auth}/oauth/authorize?` + new URLSearchParams({ client_id: client.id, response_type: 'code', scope: 'global', state: 's' });
      return (await walkAuthorization(new Browser(n.auth), url, op, clock)).searchParams.get('code')!;
    };
    const token = (n: InProcessSlipway, form: Record<string, string>) => http('POST', `${n.auth}/oauth/token`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: client.id, client_secret: client.secret, ...form }).toString(),
    });
    const code = await codeOn(a);
    const first = await token(b, { grant_type: 'authorization_code', code });
    t.equal(first.status, 200, 'a code issued on A is exchanged on B');
    const replay = await token(a, { grant_type: 'authorization_code', code });
    t.equal(replay.status, 400, 'and refused on A afterwards');
    t.equal(replay.json.error, 'invalid_grant');
    t.equal((await api(b, 'GET', '/account', first.json.access_token)).status, 401, 'the replay revoked what the exchange on B issued');

    for (let round = 0; round < 6; round++) {
      const c = await codeOn(round % 2 ? a : b);
      const both = await Promise.all([token(a, { grant_type: 'authorization_code', code: c }), token(b, { grant_type: 'authorization_code', code: c })]);
      t.ok(both.filter((r) => r.status === 200).length <= 1, `round ${round}: concurrent exchanges on A and B never both get tokens`);
    }

    clock.advance(60_000);
    const fresh = await token(a, { grant_type: 'authorization_code', code: await codeOn(b) });
    t.equal(fresh.status, 200);
    const refreshed = await token(b, { grant_type: 'refresh_token', refresh_token: fresh.json.refresh_token });
    t.equal(refreshed.status, 201, 'refreshed on B');
    t.equal((await api(a, 'GET', '/account', fresh.json.access_token)).status, 401, 'the access token it replaced fails on A at once');
    t.equal((await api(a, 'GET', '/account', refreshed.json.access_token)).status, 200, 'the new one works on A');
    for (let round = 0; round < 6; round++) {
      clock.advance(60_000); // refills the operator's pool of 10 (75 a minute): every call here counts
      const both = await Promise.all([a, b].map((n) => token(n, { grant_type: 'refresh_token', refresh_token: fresh.json.refresh_token })));
      const live = await Promise.all(both.filter((r) => r.status === 201).map(async (r) => (await api(round % 2 ? a : b, 'GET', '/account', r.json.access_token)).status));
      t.same(live.filter((s) => s === 200).length, 1, `round ${round}: after concurrent refreshes on A and B one access token is live`);
    }
  });

  await t.test('a secret-showing dashboard form acts once, even when the reload reaches the other node', async (t) => {
    clock.advance(60_000);
    const browser = new Browser(a.auth);
    t.equal((await signIn(browser, op, clock)).status, 303);
    const form = findForm((await browser.get('/account/applications')).text, '/account/authorizations');
    const fields = { ...form.fields, description: 'once across nodes', scope: 'read' };
    const first = await browser.post(`${a.auth}/account/authorizations`, fields);
    t.equal(first.status, 200, 'created on A, token shown');
    const again = await browser.post(`${b.auth}/account/authorizations`, fields);
    t.equal(again.status, 409, 'the same form re-posted to B creates nothing');
    const made = ((await api(b, 'GET', '/oauth/authorizations', op.apiKey)).json as Array<{ description: string }>).filter((x) => x.description === 'once across nodes');
    t.equal(made.length, 1, 'one authorization');
  });

  await t.test('one rate-limit pool per account across the nodes', async (t) => {
    const who = await createAccount(a, 'pool-cluster@example.com');
    const call = (n: InProcessSlipway) => api(n, 'GET', '/account', who.apiKey);
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) seen.push((await call(i % 2 ? b : a)).headers['ratelimit-remaining']!);
    t.same(seen, ['9', '8', '7', '6', '5', '4', '3', '2', '1', '0'], 'alternating nodes count down one pool');
    t.equal((await call(a)).status, 429, 'empty on A');
    t.equal((await call(b)).status, 429, 'and on B');
    t.equal((await api(b, 'GET', '/account/rate-limits', who.apiKey)).json.remaining, 0, 'GET /account/rate-limits on B sees it');
    for (let round = 0; round < 5; round++) {
      clock.advance(3600_000);
      const replies = await Promise.all(Array.from({ length: 24 }, (_, i) => call(i % 2 ? a : b)));
      const granted = replies.filter((r) => r.status === 200);
      t.equal(granted.length, 10, `round ${round}: 24 concurrent requests on two nodes, exactly the pool of 10 served`);
      t.same(granted.map((r) => Number(r.headers['ratelimit-remaining'])).sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'each told a distinct, exact remainder');
      t.ok(replies.filter((r) => r.status !== 200).every((r) => r.status === 429), 'the rest refused with 429');
    }
  });
});
