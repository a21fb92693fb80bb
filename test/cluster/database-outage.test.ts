/**
 * Failure behaviour in cluster mode (SLIPWAY_DATABASE_URL), against a real PostgreSQL:
 * - the database stopped mid-traffic: every host answers 503 in its own error format (registry:
 *   distribution error `UNAVAILABLE`; API: `{id: "unavailable", message}`; auth host: a 503 page,
 *   and `temporarily_unavailable` at the token endpoint), each within a bounded time, with
 *   Retry-After; readiness turns false; no request hangs or gets a 500;
 * - the database started again (after a fast shutdown, and after a crash): the node serves again
 *   by itself, without a restart;
 * - a start against an unreachable database or with a malformed URL ends with a message naming
 *   SLIPWAY_DATABASE_URL (never its password) and a non-zero exit, within a bounded time;
 * - `slipway backup` and `restore` (LMDB only) refuse in cluster mode.
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { waitFor } from '../helpers/harness.js';
import { postgresSkip } from '../helpers/postgres.js';
import { startOutageNode } from '../helpers/outage.js';
import { freePort } from '../helpers/daemons.js';
import { runCli, tempDir } from '../helpers/server.js';
import { http, type Reply } from '../helpers/http.js';
import { api, Browser, findForm, registerClient } from '../helpers/oauth.js';

const skip = postgresSkip();
/** Longest any request may take while the database is down (connect and statement timeouts are 2 s here). */
const BOUND_MS = 5_000;

async function timed(fn: () => Promise<Reply>): Promise<{ r: Reply; ms: number }> {
  const t0 = performance.now();
  const r = await fn();
  return { r, ms: Math.round(performance.now() - t0) };
}

t.test('the metadata database stops mid-traffic and comes back', { skip }, async (t) => {
  const { db, node, key, img, registry } = await startOutageNode(t, 'outage');
  const client = await registerClient(node, key);
  const browser = new Browser(node.auth);
  const signInForm = findForm((await browser.get('/login')).text, '/login');

  // Traffic through the outage: one request after another, each timed.
  const seen: Array<{ status: number; ms: number }> = [];
  let traffic = true;
  const loop = (async () => {
    while (traffic) {
      const { r, ms } = await timed(() => api(node, 'GET', '/account', key));
      seen.push({ status: r.status, ms });
    }
  })();
  await waitFor('traffic before the outage', () => seen.length >= 5);

  await db.halt('fast');
  const haltedAt = performance.now();

  const apiReply = await timed(() => api(node, 'GET', '/account', key));
  t.equal(apiReply.r.status, 503, 'API: 503');
  t.equal(apiReply.r.json?.id, 'unavailable', 'API: platform error id');
  t.match(apiReply.r.json?.message, /database is unavailable/, 'API: the message says why');
  t.equal(apiReply.r.headers['retry-after'], '2', 'API: Retry-After');

  const manifest = await timed(() => http('GET', `${node.urls.registry}/v2/outage/web/manifests/v1`, { headers: registry.auth }));
  t.equal(manifest.r.status, 503, 'registry: 503');
  t.equal(manifest.r.json?.errors?.[0]?.code, 'UNAVAILABLE', 'registry: distribution error code UNAVAILABLE');
  t.equal(manifest.r.headers['retry-after'], '2', 'registry: Retry-After');

  const token = await timed(() => http('POST', `${node.auth}/oauth/token`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'x'.repeat(40), client_id: client.id, client_secret: client.secret }).toString(),
  }));
  t.equal(token.r.status, 503, 'token endpoint: 503');
  t.equal(token.r.json?.error, 'temporarily_unavailable', 'token endpoint: RFC 6749 error name');

  const page = await timed(() => browser.post(signInForm.action, { ...signInForm.fields, email: 'operator@slipway.local', password: 'whatever', code: '000000' }));
  t.equal(page.r.status, 503, 'sign-in page: 503');
  t.match(page.r.text, /database is unavailable/, 'sign-in page: the message says why');

  const latencies = { api: apiReply.ms, registry: manifest.ms, token: token.ms, signIn: page.ms };
  t.comment(`503 latencies with the database down (ms): ${JSON.stringify(latencies)}`);
  for (const [host, ms] of Object.entries(latencies)) t.ok(ms < BOUND_MS, `${host} answered in ${ms} ms`);

  const notReady = await waitFor('readiness to turn false', async () => {
    const r = await http('GET', `${node.urls.admin}/readyz`);
    return r.status === 503 ? r : false;
  }, { timeoutMs: 10_000, intervalMs: 50 });
  const notReadyMs = Math.round(performance.now() - haltedAt);
  t.ok(notReady.json?.checks?.store && notReady.json.checks.store !== 'ok', `readiness names the store: ${notReady.json?.checks?.store}`);
  t.comment(`readiness false ${notReadyMs} ms after the stop`);

  await db.resume();
  const resumedAt = performance.now();
  await waitFor('the API to answer again', async () => (await api(node, 'GET', '/account', key)).status === 200, { timeoutMs: 30_000, intervalMs: 20 });
  const recoveryMs = Math.round(performance.now() - resumedAt);
  await waitFor('readiness to turn true', async () => (await http('GET', `${node.urls.admin}/readyz`)).status === 200, { timeoutMs: 30_000, intervalMs: 50 });
  t.comment(`API serving again ${recoveryMs} ms after the database accepted connections; no Slipway restart`);
  const back = await http('GET', `${node.urls.registry}/v2/outage/web/manifests/v1`, { headers: { ...registry.auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
  t.equal(back.status, 200, 'registry serves again');
  t.equal(back.headers['docker-content-digest'], img.manifestDigest);

  // A crash of the database (no shutdown messages to the clients, crash recovery at restart).
  await db.halt('immediate');
  const crashed = await timed(() => api(node, 'GET', '/account', key));
  t.equal(crashed.r.status, 503, `after a database crash: 503 in ${crashed.ms} ms`);
  t.ok(crashed.ms < BOUND_MS);
  await waitFor('readiness to turn false after the crash', async () => (await http('GET', `${node.urls.admin}/readyz`)).status === 503, { timeoutMs: 10_000, intervalMs: 50 });
  await db.resume();
  const crashResumedAt = performance.now();
  await waitFor('the API to answer after the crash recovery', async () => (await api(node, 'GET', '/account', key)).status === 200, { timeoutMs: 30_000, intervalMs: 20 });
  t.comment(`after a database crash: API serving again ${Math.round(performance.now() - crashResumedAt)} ms after the database accepted connections`);
  t.equal((await api(node, 'GET', '/apps/outage', key)).status, 200, 'data written before the crash is there');

  traffic = false;
  await loop;
  const statuses = [...new Set(seen.map((s) => s.status))].sort();
  t.same(statuses, [200, 503], 'the traffic saw only 200 and 503: no 500, no wrong answer');
  const slowest = Math.max(...seen.map((s) => s.ms));
  t.ok(slowest < BOUND_MS, `no request hung: slowest ${slowest} ms of ${seen.length}`);
});

t.test('a start against an unreachable database ends with a message naming the setting', { skip }, async (t) => {
  const port = await freePort();
  // `slipway serve` run to its end (no start deadline of the harness: a busy machine starts
  // processes slowly); the time from start to exit includes the process start.
  const started = performance.now();
  const r = await runCli(['serve', '--data', tmpData(t)], { SLIPWAY_DATABASE_URL: `postgres://slipway:s3cret-pw@127.0.0.1:${port}/slipway`, SLIPWAY_DATABASE_CONNECT_TIMEOUT: '2' });
  t.equal(r.code, 1, 'exit 1');
  t.match(r.stdout + r.stderr, /cannot reach the metadata database at postgres:\/\/slipway:\*\*\*@127\.0\.0\.1:\d+\/slipway \(SLIPWAY_DATABASE_URL\)/, 'the message (a JSON log line on stdout since start-up lines are JSON) names the setting and the redacted URL');
  t.notMatch(r.stdout + r.stderr, /s3cret-pw/, 'the password is never printed');
  t.comment(`unreachable database: exited ${Math.round(performance.now() - started)} ms after the process started`);
});

t.test('a malformed database URL stops the start naming the setting', async (t) => {
  for (const [url, why] of [['mysql://u@h/db', /expected a PostgreSQL URL.*got "mysql:\/\/u@h\/db"/], ['postgres:///db', /names no host/], ['postgres://u:pw@h:5432', /names no database/], ['not a url', /expected a PostgreSQL URL.*got "\(unparseable URL\)"/]] as const) {
    const r = await runCli(['serve', '--data', tmpData(t)], { SLIPWAY_DATABASE_URL: url });
    t.equal(r.code, 1, `${url}: exit 1`);
    t.match(r.stderr, /environment variable SLIPWAY_DATABASE_URL/, `${url}: names the setting`);
    t.match(r.stderr, why, `${url}: says what is wrong`);
    t.notMatch(r.stderr, /:pw@/, `${url}: no password in the message`);
  }
  const pool = await runCli(['serve', '--data', tmpData(t)], { SLIPWAY_DATABASE_POOL: '0' });
  t.match(pool.stderr, /SLIPWAY_DATABASE_POOL: expected an integer 1-1000 \(connections\), got "0"/);
});

/** A temporary data directory removed when `t` ends. */
function tmpData(t: Test): string {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  return tmp.dir;
}

t.test('backup and restore refuse in cluster mode, saying what to use instead', async (t) => {
  const dir = tmpData(t);
  const env = { SLIPWAY_DATABASE_URL: 'postgres://slipway:pw@127.0.0.1:1/slipway' };
  for (const args of [['backup', '--to', join(dir, 'b')], ['restore', '--from', join(dir, 'b'), '--data', join(dir, 'd')]]) {
    const r = await runCli(args, env);
    t.equal(r.code, 1, `${args[0]}: exit 1`);
    t.match(r.stderr, new RegExp(`slipway ${args[0]} works on the embedded LMDB store only; SLIPWAY_DATABASE_URL is set.*pg_dump`), `${args[0]}: says why and what instead`);
  }
});
