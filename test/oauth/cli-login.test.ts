/**
 * The CLI browser-login service of the auth host over HTTP (what `heroku login` speaks, see
 * test/interop/cli-login.test.ts for the stock CLI itself): the start and poll shapes, every
 * error a poll can get, CSRF and sign-in on the confirmation, expiry on the test clock, and a
 * race test: concurrent polls around the approval get the token exactly once.
 */
import t from 'tap';
import { api, Browser, findForm, signIn } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { http, type Reply } from '../helpers/http.js';
import { totpCode, TOTP_STEP_SECONDS } from '../../engine/identity/totp.js';
import { loadConfig } from '../../server/config.js';
import { ManualClock } from '../../engine/clock.js';
import { CliLogins } from '../../engine/oauth/cli-logins.js';
import { openStore } from '../../engine/store.js';
import { tempDir } from '../helpers/server.js';

// Polls wait at most 0.3 s here, so "pending" answers come quickly.
const ts = await startInProcess({ env: { SLIPWAY_CLI_LOGIN_POLL_WAIT: '0.3' } });
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;

interface Started { browser_url: string; cli_url: string; token: string; expires_in: number }

async function start(description = 'Heroku CLI login from test-host'): Promise<Started> {
  const r = await http('POST', ts.auth + '/auth', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ description }) });
  if (r.status !== 201) throw new Error(`start: ${r.status} ${r.text}`);
  return r.json;
}
const poll = (s: Started, token = s.token): Promise<Reply> => http('GET', ts.auth + s.cli_url, { headers: { authorization: `Bearer ${token}` } });
const count = async (description: string) => ((await api(ts, 'GET', '/oauth/authorizations', key)).json as Array<{ description: string }>).filter((a) => a.description === description).length;

/** A browser signed in as the operator. */
async function signedIn(): Promise<Browser> {
  const b = new Browser(ts.auth);
  const r = await signIn(b, ts.operator, ts.clock);
  if (r.status !== 303) throw new Error(`sign-in: ${r.status}`);
  return b;
}
/** Answers the confirmation page of `s` in `b`. */
async function answer(b: Browser, s: Started, decision: 'allow' | 'deny'): Promise<Reply> {
  const page = await b.get(s.browser_url);
  if (page.status !== 200) return page;
  const form = findForm(page.text, s.browser_url);
  return b.post(form.action, { ...form.fields, decision });
}

t.test('start: the shape the CLI reads; bad bodies change nothing', async (t) => {
  const s = await start();
  t.match(s, { browser_url: /^\/auth\/cli\/browser\/[A-Za-z0-9_-]{43}$/, cli_url: /^\/auth\/cli\/poll\/[A-Za-z0-9_-]{43}$/, token: /^[A-Za-z0-9_-]{43}$/, expires_in: 600 });
  t.equal(s.browser_url.split('/').pop(), s.cli_url.split('/').pop(), 'one login id');
  const bad = await http('POST', ts.auth + '/auth', { headers: { 'content-type': 'application/json' }, body: '{"description": 5}' });
  t.equal(bad.status, 422);
  t.equal(bad.json.id, 'invalid_params');
  const broken = await http('POST', ts.auth + '/auth', { headers: { 'content-type': 'application/json' }, body: '{' });
  t.equal(broken.status, 400);
  t.match(broken.json.message, /not valid JSON/);
  t.equal((await ts.server.oauth.cliLogins.get(s.cli_url.split('/').pop()!))!.tokenHash.length, 64, 'the polling token is kept as its sha256 only');
  t.notMatch(JSON.stringify(await ts.server.oauth.cliLogins.get(s.cli_url.split('/').pop()!)), s.token);
});

t.test('poll: pending, wrong token, unknown login', async (t) => {
  const s = await start();
  const pending = await poll(s);
  t.equal(pending.status, 503, 'pending: a status above 500, so the stock CLI polls again');
  t.equal(pending.json.id, 'authorization_pending');
  t.match(pending.json.message, ts.auth + s.browser_url);
  t.equal(pending.headers['cache-control'], 'no-store');
  const other = await start();
  t.equal((await poll(s, other.token)).status, 401, 'another login\'s token is refused');
  t.equal((await http('GET', ts.auth + s.cli_url)).status, 401, 'no token');
  const unknown = await http('GET', ts.auth + '/auth/cli/poll/' + 'A'.repeat(43), { headers: { authorization: `Bearer ${s.token}` } });
  t.equal(unknown.status, 404);
  t.equal(unknown.json.id, 'not_found');
  t.equal((await new Browser(ts.auth).get('/auth/cli/browser/' + 'A'.repeat(43))).status, 404, 'the browser page of an unknown login');
});

t.test('the browser page needs sign-in with the second factor; a wrong code gives nothing', async (t) => {
  const description = 'wrong code host';
  const s = await start(description);
  const b = new Browser(ts.auth);
  const first = await b.get(s.browser_url);
  t.equal(first.status, 302);
  t.equal(first.headers.location, '/login?' + new URLSearchParams({ return_to: s.browser_url }).toString());
  // signIn moves the clock one TOTP step before it types the code: a code off by one digit there.
  const right = totpCode(ts.operator.totpSecret, ts.clock.now() + TOTP_STEP_SECONDS * 1000);
  const wrong = await signIn(b, ts.operator, ts.clock, s.browser_url, { code: right.slice(0, 5) + String((Number(right[5]) + 1) % 10) });
  t.equal(wrong.status, 401, 'a wrong code is refused');
  t.equal((await b.get(s.browser_url)).status, 302, 'still not signed in');
  t.equal((await poll(s)).status, 503, 'the login is still pending');
  t.equal(await count(description), 0, 'no authorization');
  const ok = await signIn(b, ts.operator, ts.clock, s.browser_url);
  t.equal(ok.status, 303);
  t.equal(ok.headers.location, s.browser_url, 'back to the confirmation after sign-in');
  const page = await b.get(s.browser_url);
  t.equal(page.status, 200);
  t.match(page.text, description);
  const noCsrf = await b.post(s.browser_url, { decision: 'allow' });
  t.equal(noCsrf.status, 403, 'the confirmation is CSRF-protected');
  t.equal((await poll(s)).status, 503, 'and changed nothing');
  const anon = new Browser(ts.auth);
  await anon.get('/login');
  const form = findForm(page.text, s.browser_url);
  t.equal((await anon.post(s.browser_url, { ...form.fields, decision: 'allow' })).status, 403, 'a form from another browser is refused');
});

t.test('approve: the token once; then every poll hears it was handed out', async (t) => {
  const description = 'approve host';
  const s = await start(description);
  const b = await signedIn();
  const waiting = poll(s);
  const done = await answer(b, s, 'allow');
  t.equal(done.status, 200);
  t.match(done.text, 'You can close this window');
  const got = await waiting;
  t.equal(got.status, 200, 'the waiting poll gets the token');
  t.match(got.json, { access_token: /^SVC-/, expires_in: 30 * 86_400, user: { email: ts.operator.email } });
  t.equal((await api(ts, 'GET', '/account', got.json.access_token)).status, 200, 'the token works');
  const again = await poll(s);
  t.equal(again.status, 410);
  t.equal(again.json.id, 'invalid_grant');
  t.notMatch(again.text, /SVC-/);
  t.equal((await answer(b, s, 'allow')).status, 409, 'an answered login cannot be answered again');
  t.equal(await count(description), 1);
});

t.test('deny: the poll is refused with access_denied, and stays so', async (t) => {
  const description = 'deny host';
  const s = await start(description);
  const b = await signedIn();
  t.equal((await answer(b, s, 'deny')).status, 200);
  for (let i = 0; i < 2; i++) {
    const r = await poll(s);
    t.equal(r.status, 403);
    t.equal(r.json.id, 'access_denied');
    t.match(r.json.message, /denied in the browser/);
  }
  t.equal(await count(description), 0);
});

t.test('expiry: ten minutes on the clock', async (t) => {
  const description = 'slow host';
  const s = await start(description);
  const b = await signedIn();
  ts.clock.advance(10 * 60_000);
  const r = await poll(s);
  t.equal(r.status, 410);
  t.equal(r.json.id, 'expired_token');
  t.equal((await b.get(s.browser_url)).status, 410, 'the browser page says it expired');
  t.equal(await count(description), 0);
  // Approved but not collected in time: expired too, and no token is ever made.
  const late = await start(description);
  t.equal((await answer(await signedIn(), late, 'allow')).status, 200);
  ts.clock.advance(10 * 60_000);
  t.equal((await poll(late)).json.id, 'expired_token');
  t.equal(await count(description), 0);
});

t.test('race: concurrent polls around the approval get the token exactly once', async (t) => {
  const b = await signedIn();
  const rounds = 25;
  for (let i = 0; i < rounds; i++) {
    const description = `race ${i}`;
    const s = await start(description);
    const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 15)); // deliberate: random interleaving (the race)
    const polls = Array.from({ length: 4 }, async () => { await jitter(); return poll(s); });
    const approval = (async () => { await jitter(); return answer(b, s, 'allow'); })();
    const replies = await Promise.all(polls);
    t.equal((await approval).status, 200);
    let tokens = replies.filter((r) => r.status === 200).map((r) => r.json.access_token as string);
    t.ok(replies.every((r) => [200, 410, 503].includes(r.status)), 'only token, handed-out or pending answers');
    // Polls that all gave up before the approval: the next one collects.
    if (tokens.length === 0) {
      const next = await poll(s);
      if (next.status === 200) tokens = [next.json.access_token];
    }
    const after = await poll(s);
    if (tokens.length !== 1 || after.status !== 410 || (await count(description)) !== 1) {
      t.fail(`round ${i}: ${tokens.length} tokens, then ${after.status}, ${await count(description)} authorizations`);
      return;
    }
  }
  t.pass(`${rounds} rounds: one token, one authorization, later polls refused`);
});

t.test('SLIPWAY_CLI_LOGIN_POLL_WAIT', async (t) => {
  t.equal(loadConfig({}).cliLoginPollSeconds, 50, 'default below the CLI\'s 60 s request timeout');
  t.equal(loadConfig({ SLIPWAY_CLI_LOGIN_POLL_WAIT: '2.5' }).cliLoginPollSeconds, 2.5);
  t.throws(() => loadConfig({ SLIPWAY_CLI_LOGIN_POLL_WAIT: '0' }), /SLIPWAY_CLI_LOGIN_POLL_WAIT: expected a number of seconds above 0 \(decimals allowed\), got "0"/);
  t.throws(() => loadConfig({ SLIPWAY_CLI_LOGIN_POLL_WAIT: 'soon' }), /SLIPWAY_CLI_LOGIN_POLL_WAIT/);
});

t.test('at most maxPending logins wait at once; ended ones are forgotten later', async (t) => {
  const clock = new ManualClock();
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  const logins = new CliLogins(store.metadata, clock, { ttlMs: 60_000, maxPending: 2 });
  const a = await logins.start('a');
  await logins.start('b');
  await t.rejects(logins.start('c'), { code: 'RATE_LIMITED' });
  t.equal(await logins.decide(a.login.id, 'acct', false), 'ok');
  t.ok(await logins.start('c'), 'an answered login no longer counts');
  clock.advance(60_000);
  t.ok(await logins.start('d'), 'expired ones do not count');
  t.equal((await logins.claim(a.login.id, a.token)).kind, 'denied', 'an ended login is remembered for a while');
  clock.advance(60_000 + 10 * 60_000);
  t.equal(await logins.prune(), 4, 'pruning (every 10 minutes, and at each start) forgets them');
  t.equal((await logins.claim(a.login.id, a.token)).kind, 'unknown', 'then forgotten');
  t.equal((await logins.start('\u0007 x\ny ')).login.description, 'x y', 'control characters are cut from descriptions');
  t.equal((await logins.claim('x'.repeat(600), a.token)).kind, 'unknown', 'an id that is no login id is unknown, without a store read');
});
