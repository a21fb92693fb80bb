/**
 * Platform API conventions on every response (docs/rules.md Versioning; docs/platform-conventions.md 1): Accept version
 * negotiation, Request-Id, ETag / Last-Modified / If-None-Match, Range pagination, the
 * per-account rate limit, and `{id, message}` errors.
 */
import t from 'tap';
import { api, V3 } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { http } from '../helpers/http.js';

const ts = await startInProcess();
const small = await startInProcess({ env: { SLIPWAY_RATE_LIMIT_POOL: '5', SLIPWAY_RATE_LIMIT_PER_MINUTE: '75' } });
t.teardown(async () => { await ts.stop(); await small.stop(); });
const key = ts.operator.apiKey;
for (const name of ['page-c', 'page-a', 'page-e', 'page-b', 'page-d']) await api(ts, 'POST', '/apps', key, { name });

t.test('Accept: v3 and variants served; wrong version, vendor or type → 406; missing = v3', async (t) => {
  const get = (accept?: string) => http('GET', `${ts.api}/account`, { headers: { authorization: `Bearer ${key}`, ...(accept === undefined ? {} : { accept }) } });
  for (const ok of [V3, 'application/vnd.slipway+json; version=3.container-releases', 'application/vnd.slipway+json', 'application/json', '*/*', 'text/html, application/*;q=0.5', 'application/vnd.slipway+json;version="3"', 'application/vnd.heroku+json; version=3' /* a compatible vendor (SLIPWAY_ACCEPT_VENDORS default) */]) {
    t.equal((await get(ok)).status, 200, `Accept: ${ok}`);
  }
  t.equal((await get()).status, 200, 'no Accept header: version 3 (documented choice)');
  for (const bad of ['application/vnd.slipway+json; version=2', 'application/vnd.other+json; version=3', 'text/html', 'application/vnd.slipway+json; version=2, */*', 'application/json;q=0']) {
    const r = await get(bad);
    t.equal(r.status, 406, `Accept: ${bad}`);
    t.equal(r.json.id, 'not_acceptable');
    t.match(r.json.message, /Please use Accept: application\/vnd\.slipway\+json; version=3/);
  }
  const before = (await api(ts, 'GET', '/apps', key)).json.length;
  const refused = await http('POST', `${ts.api}/apps`, { headers: { authorization: `Bearer ${key}`, accept: 'application/vnd.slipway+json; version=2', 'content-type': 'application/json' }, body: '{"name":"not-created"}' });
  t.equal(refused.status, 406);
  t.equal((await api(ts, 'GET', '/apps', key)).json.length, before, 'a 406 changes nothing');
});

t.test('Request-Id, ETag, Last-Modified and RateLimit-Remaining on every response', async (t) => {
  const ok = await api(ts, 'GET', '/account', key);
  const err = await api(ts, 'GET', '/apps/nope', key);
  const anon = await api(ts, 'GET', '/account', null);
  for (const [label, r] of [['200', ok], ['404', err], ['401', anon]] as const) {
    t.match(r.headers['request-id'], /^[0-9a-f-]{36}$/, `${label} Request-Id`);
    t.match(r.headers.etag, /^"[0-9a-f]{32}"$/, `${label} ETag`);
    t.ok(Date.parse(r.headers['last-modified']!) > 0, `${label} Last-Modified`);
    t.match(r.headers['content-type'], /^application\/json/);
  }
  t.match(ok.headers['ratelimit-remaining'], /^\d+$/);
  t.match(err.headers['ratelimit-remaining'], /^\d+$/);
  t.notOk(anon.headers['ratelimit-remaining'], 'no pool without an account');
  t.same(err.json, { id: 'not_found', message: "Couldn't find that app.", resource: 'app' });
  t.same(anon.json.id, 'unauthorized');
  t.equal(anon.headers['www-authenticate'], 'Bearer realm="slipway"');
  const mine = await api(ts, 'GET', '/account', key, undefined, { 'request-id': 'trace-123' });
  t.equal(mine.headers['request-id'], 'trace-123', 'a client Request-Id is kept');
  t.equal(ok.headers['last-modified'], new Date(Date.parse(ok.json.updated_at)).toUTCString(), 'Last-Modified is updated_at');
});

t.test('If-None-Match → 304 with an empty body', async (t) => {
  const first = await api(ts, 'GET', '/apps/page-a', key);
  const again = await api(ts, 'GET', '/apps/page-a', key, undefined, { 'if-none-match': first.headers.etag! });
  t.equal(again.status, 304);
  t.equal(again.text, '');
  t.equal(again.headers.etag, first.headers.etag);
  t.match(again.headers['ratelimit-remaining'], /^\d+$/);
  t.equal((await api(ts, 'GET', '/apps/page-a', key, undefined, { 'if-none-match': `W/${first.headers.etag}, "other"` })).status, 304, 'weak and list forms');
  t.equal((await api(ts, 'GET', '/apps/page-a', key, undefined, { 'if-none-match': '"stale"' })).status, 200);
  t.equal((await api(ts, 'GET', '/apps', key, undefined, { 'if-none-match': first.headers.etag! })).status, 200, 'another body, another tag');
});

t.test('Range pagination: 206 + Next-Range only when more remain', async (t) => {
  const p1 = await api(ts, 'GET', '/apps', key, undefined, { range: 'name ..; max=2' });
  t.equal(p1.status, 206);
  t.same(p1.json.map((a: { name: string }) => a.name), ['page-a', 'page-b']);
  t.equal(p1.headers['content-range'], 'name page-a..page-b; max=2');
  t.equal(p1.headers['next-range'], 'name ]page-b..; max=2');
  t.equal(p1.headers['accept-ranges'], 'id, name, updated_at');
  const p2 = await api(ts, 'GET', '/apps', key, undefined, { range: p1.headers['next-range']! });
  t.same(p2.json.map((a: { name: string }) => a.name), ['page-c', 'page-d']);
  const p3 = await api(ts, 'GET', '/apps', key, undefined, { range: p2.headers['next-range']! });
  t.equal(p3.status, 200, 'the last page is 200');
  t.same(p3.json.map((a: { name: string }) => a.name), ['page-e']);
  t.notOk(p3.headers['next-range']);
  const desc = await api(ts, 'GET', '/apps', key, undefined, { range: 'name ..; order=desc, max=3' });
  t.same(desc.json.map((a: { name: string }) => a.name), ['page-e', 'page-d', 'page-c']);
  t.equal(desc.headers['next-range'], 'name ]page-c..; max=3, order=desc');
  const descNext = await api(ts, 'GET', '/apps', key, undefined, { range: desc.headers['next-range']! });
  t.same(descNext.json.map((a: { name: string }) => a.name), ['page-b', 'page-a']);
  const bounded = await api(ts, 'GET', '/apps', key, undefined, { range: 'name page-b..page-d[; max=10' });
  t.same(bounded.json.map((a: { name: string }) => a.name), ['page-b', 'page-c'], 'inclusive start, exclusive end');
  const all = await api(ts, 'GET', '/apps', key);
  t.equal(all.status, 200, 'default range fits: 200');
  t.match(all.headers['content-range'], /^id [0-9a-f-]+\.\.[0-9a-f-]+; max=200$/);
  const byId = await api(ts, 'GET', '/oauth/authorizations', key, undefined, { range: 'id ..; max=1' });
  t.equal(byId.status, 200, 'exactly one authorization: fits');
});

t.test('bad Range → 416 requested_range_not_satisfiable, on every list', async (t) => {
  const cases: Array<[string, string]> = [
    ['/apps', 'bogus'], ['/apps', 'email ..; max=5'], ['/apps', 'name ..; max=0'], ['/apps', 'name ..; max=1001'],
    ['/apps', 'name ..; max=ten'], ['/apps', 'name ..; order=sideways'], ['/apps', 'name ..; limit=5'], ['/apps', '..; max=5'],
    ['/oauth/authorizations', 'name ..; max=5'], ['/oauth/clients', 'updated_at ..'],
  ];
  for (const [path, range] of cases) {
    const r = await api(ts, 'GET', path, key, undefined, { range });
    t.equal(r.status, 416, `${path} Range: ${range}`);
    t.equal(r.json.id, 'requested_range_not_satisfiable');
    t.match(r.json.message, /Invalid Range header/);
  }
});

t.test('rate limit: a pool per account, 429 rate_limit when empty, refilled over time', async (t) => {
  const k = small.operator.apiKey;
  const seen: number[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await api(small, 'GET', '/account', k);
    t.equal(r.status, 200);
    seen.push(Number(r.headers['ratelimit-remaining']));
  }
  t.same(seen, [4, 3, 2, 1, 0]);
  const limited = await api(small, 'GET', '/account', k);
  t.equal(limited.status, 429);
  t.equal(limited.json.id, 'rate_limit');
  t.match(limited.json.message, /Your account reached the API rate limit/);
  t.equal(limited.headers['ratelimit-remaining'], '0');
  const info = await api(small, 'GET', '/account/rate-limits', k);
  t.equal(info.status, 200, '/account/rate-limits is not counted');
  t.same(info.json, { remaining: 0 });
  const before = (await api(small, 'GET', '/account/rate-limits', k)).json.remaining;
  t.equal(before, 0, 'and reading it twice took nothing');
  const blocked = await api(small, 'POST', '/apps', k, { name: 'blocked-app' });
  t.equal(blocked.status, 429, 'a limited write changes nothing');
  small.clock.advance(800);
  t.same((await api(small, 'GET', '/account/rate-limits', k)).json, { remaining: 1 }, '75 per minute = one per 800 ms');
  t.equal((await api(small, 'GET', '/apps', k)).json.length, 0, 'the blocked app was not created');
  small.clock.advance(3600_000);
  t.same((await api(small, 'GET', '/account/rate-limits', k)).json, { remaining: 5 }, 'refills up to the pool, not beyond');
});

t.test('routing errors: 404 and 405 in the {id, message} shape', async (t) => {
  const nf = await api(ts, 'GET', '/nothing/here', key);
  t.equal(nf.status, 404);
  t.equal(nf.json.id, 'not_found');
  const na = await api(ts, 'PUT', '/account', key);
  t.equal(na.status, 405);
  t.equal(na.json.id, 'method_not_allowed');
  t.match(na.json.message, /allowed: GET/);
  t.equal(na.headers.allow, 'GET');
  const rl = await api(ts, 'GET', '/account/rate-limits', key);
  t.equal(rl.status, 200, 'literal path wins over a capture');
});
