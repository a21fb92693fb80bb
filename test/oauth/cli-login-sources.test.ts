/**
 * Pending `heroku login`s are limited per source address (issue: ~1,000 anonymous POST /auth
 * filled the installation-wide cap and every login got 429 for 10 minutes; docs/faults.md "CLI
 * logins"):
 * - one source (loopback 127.0.0.2) floods POST /auth 1,000 times, each with another forged
 *   X-Forwarded-For: exactly SLIPWAY_CLI_LOGINS_PER_SOURCE (10) are started, the rest get 429
 *   `rate_limit` saying why; meanwhile the stock `heroku login` from another source (127.0.0.1)
 *   logs in (the browser side answered over HTTP as a person would);
 * - behind a trusted proxy (SLIPWAY_TRUSTED_PROXIES), the client is the X-Forwarded-For address
 *   the proxy appended: one client behind the proxy is limited, another is not, and hops the
 *   client wrote itself do not count.
 */
import t from 'tap';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startInProcess, type InProcessSlipway } from '../helpers/harness.js';
import { Browser, findForm, signIn } from '../helpers/oauth.js';
import { herokuLogin } from '../helpers/platform-cli.js';

interface Answer { status: number; json: { id?: string; message?: string; cli_url?: string } }

/** POST /auth as the CLI sends it, from local address `from`, with extra headers. */
function startLogin(ts: InProcessSlipway, from: string, headers: Record<string, string> = {}): Promise<Answer> {
  const u = new URL(ts.auth + '/auth');
  const body = JSON.stringify({ description: 'flood' });
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', localAddress: from, agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(parts).toString() || '{}') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Sends `n` starts, `concurrency` at a time; `headers(i)` for the i-th. Returns how many got each status. */
async function flood(ts: InProcessSlipway, from: string, n: number, concurrency: number, headers: (i: number) => Record<string, string> = () => ({})) {
  const statuses: Record<number, number> = {};
  const messages = new Set<string>();
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      const i = next++;
      const r = await startLogin(ts, from, headers(i));
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status !== 201) messages.add(`${r.json.id}: ${r.json.message}`);
    }
  }));
  return { statuses, messages: [...messages] };
}

t.test('one source floods; another source\'s heroku login still works', async (t) => {
  const ts = await startInProcess({ env: { SLIPWAY_CLI_LOGIN_POLL_WAIT: '20' } });
  t.teardown(() => ts.stop());
  const t0 = performance.now();
  const { statuses, messages } = await flood(ts, '127.0.0.2', 1000, 32, (i) => ({ 'x-forwarded-for': `198.51.100.${i % 250}` }));
  t.comment(`flood of 1000 starts from 127.0.0.2 in ${Math.round(performance.now() - t0)} ms: ${JSON.stringify(statuses)}`);
  t.same(statuses, { 201: 10, 429: 990 }, 'exactly 10 started (forged X-Forwarded-For is not believed), the rest refused');
  t.same(messages, ['rate_limit: 10 CLI logins from your address are already waiting for their browser sign-in. Finish or cancel one, or try again when they expire (10 minutes after their start).'], 'the refusal says why');

  const home = mkdtempSync(join(tmpdir(), 'slipway-cli-source-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const run = herokuLogin(ts.api, ts.auth, home);
  const url = await Promise.race([run.url, run.done.then((r) => { throw new Error(`heroku login ended without a URL (exit ${r.code}):\n${r.all}`); })]);
  const browser = new Browser(ts.auth);
  const path = new URL(url).pathname;
  t.equal((await signIn(browser, ts.operator, ts.clock, path)).status, 303, 'signed in');
  const page = await browser.get(path);
  t.equal(page.status, 200);
  const form = findForm(page.text, path);
  t.equal((await browser.post(form.action, { ...form.fields, decision: 'allow' })).status, 200, 'login confirmed in the browser');
  const r = await run.done;
  t.equal(r.code, 0, `heroku login exits 0${r.code === 0 ? '' : ':\n' + r.all}`);
  t.match(r.all, `Logged in as ${ts.operator.email}`);
  t.match(readFileSync(join(home, '.netrc'), 'utf8'), `login ${ts.operator.email}`, '~/.netrc written');
  t.equal((await startLogin(ts, '127.0.0.2')).status, 429, 'the flooding source stays limited');
});

t.test('behind a trusted proxy the source is the address the proxy appended', async (t) => {
  const ts = await startInProcess({ env: { SLIPWAY_TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8', SLIPWAY_CLI_LOGINS_PER_SOURCE: '3' } });
  t.teardown(() => ts.stop());
  // One client behind two proxies (10.1.2.3, then the loopback one); the client forged a first hop.
  const a = await flood(ts, '127.0.0.1', 6, 3, (i) => ({ 'x-forwarded-for': `192.0.2.${i}, 198.51.100.7, 10.1.2.3` }));
  t.same(a.statuses, { 201: 3, 429: 3 }, 'client 198.51.100.7: 3 started, then refused');
  const b = await flood(ts, '127.0.0.1', 3, 3, () => ({ 'x-forwarded-for': '203.0.113.9' }));
  t.same(b.statuses, { 201: 3 }, 'another client behind the proxy is not affected');
  const v6 = await flood(ts, '127.0.0.1', 4, 1, (i) => ({ 'x-forwarded-for': `2001:db8:1:2::${i + 1}` }));
  t.same(v6.statuses, { 201: 3, 429: 1 }, 'IPv6 clients count by /64');
  const untrusted = await flood(ts, '127.0.0.3', 4, 2, (i) => ({ 'x-forwarded-for': `203.0.113.${100 + i}` }));
  t.same(untrusted.statuses, { 201: 3, 429: 1 }, 'a peer that is no trusted proxy is the source itself, whatever it forwards');
});
