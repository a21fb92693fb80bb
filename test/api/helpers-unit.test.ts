/**
 * Unit tests of the pure rules behind the API and OAuth conventions: Range parsing and
 * pagination, Accept negotiation, the rate-limit bucket, redirect URIs, PKCE, scope parsing,
 * direct-authorization field parsing.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { paginate, parseRange } from '../../server/api/range.js';
import { negotiate } from '../../server/api/accept.js';
import { RateLimiter } from '../../engine/identity/rate-limit.js';
import { ManualClock } from '../../engine/clock.js';
import { validateRedirectUri, withQuery } from '../../engine/oauth/redirect-uri.js';
import { isS256Challenge, verifyS256 } from '../../engine/oauth/pkce.js';
import { allows, parseScopeParam, scopesGranting } from '../../engine/identity/scope.js';
import { parseExpiresIn, parseScopeArray } from '../../engine/oauth/authorizations.js';
import { newToken, redactToken } from '../../engine/identity/tokens.js';

const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};

t.test('Range', async (t) => {
  t.same(parseRange('', ['id']), { property: 'id', start: null, startExclusive: false, end: null, endExclusive: false, max: 200, order: 'asc' });
  t.same(parseRange('name ]b..d[; max=2, order=desc;', ['id', 'name']), { property: 'name', start: 'b', startExclusive: true, end: 'd', endExclusive: true, max: 2, order: 'desc' });
  for (const bad of ['x', 'id', 'id ..; max=0', 'id ..; max=1001', 'id ..; foo=1', 'name ..', 'id ..; order=up']) t.equal(code(() => parseRange(bad, ['id'])), 'RANGE_NOT_SATISFIABLE', bad);
  const items = ['a', 'b', 'c', 'd', 'e'];
  const page = paginate(items, parseRange('id ..; max=2', ['id']), ['id'], (x) => x);
  t.same(page.items, ['a', 'b']);
  t.equal(page.status, 206);
  t.equal(page.headers['next-range'], 'id ]b..; max=2');
  const next = paginate(items, parseRange(page.headers['next-range']!, ['id']), ['id'], (x) => x);
  t.same(next.items, ['c', 'd']);
  const exact = paginate(items, parseRange('id ..; max=5', ['id']), ['id'], (x) => x);
  t.equal(exact.status, 200, 'exactly max items: complete');
  t.notOk(exact.headers['next-range']);
  const empty = paginate([], parseRange('', ['id']), ['id'], (x: string) => x);
  t.equal(empty.status, 200);
  t.notOk(empty.headers['content-range']);
  const bounded = paginate(items, parseRange('id ]a..d; max=10', ['id']), ['id'], (x) => x);
  t.same(bounded.items, ['b', 'c', 'd']);
  const desc = paginate(items, parseRange('id d..b; order=desc', ['id']), ['id'], (x) => x);
  t.same(desc.items, ['d', 'c', 'b']);
});

t.test('Accept', async (t) => {
  t.same(negotiate('', 'slipway'), { variant: null, mediaType: null });
  t.same(negotiate('application/vnd.slipway+json; version=3.container-releases', 'slipway'), { variant: 'container-releases', mediaType: 'application/vnd.slipway+json' });
  t.same(negotiate('application/vnd.acme+json; version=3', 'acme'), { variant: null, mediaType: 'application/vnd.acme+json' }, 'vendor is configuration');
  // Compatible vendor names (SLIPWAY_ACCEPT_VENDORS) with every variant the platform's CLI sends.
  for (const v of ['3', '3.sdk', '3.docker-releases', '3.container-releases']) {
    t.same(negotiate(`application/vnd.heroku+json; version=${v}`, 'slipway', ['heroku']), { variant: v === '3' ? null : v.slice(2), mediaType: 'application/vnd.heroku+json' }, `heroku ${v}`);
  }
  t.equal(code(() => negotiate('application/vnd.heroku+json; version=3', 'slipway', [])), 'NOT_ACCEPTABLE', 'not without the compatible list');
  t.equal(code(() => negotiate('application/vnd.heroku+json; version=2', 'slipway', ['heroku'])), 'NOT_ACCEPTABLE', 'other versions stay refused');
  t.equal(code(() => negotiate('application/vnd.slipway+json; version=3', 'acme')), 'NOT_ACCEPTABLE');
  t.equal(code(() => negotiate('application/vnd.slipway+json; version=4', 'slipway')), 'NOT_ACCEPTABLE');
  t.equal(code(() => negotiate('image/png', 'slipway')), 'NOT_ACCEPTABLE');
});

t.test('rate-limit bucket: 4500, refilled 75 per minute', async (t) => {
  const clock = new ManualClock(0);
  const rl = new RateLimiter(clock, 4500, 75);
  t.same(rl.peek('a'), { ok: true, remaining: 4500 });
  for (let i = 0; i < 4500; i++) rl.take('a');
  t.same(rl.take('a'), { ok: false, remaining: 0 });
  t.same(rl.peek('b'), { ok: true, remaining: 4500 }, 'pools are per account');
  clock.advance(60_000);
  t.equal(rl.peek('a').remaining, 75);
  clock.advance(3600_000);
  t.equal(rl.peek('a').remaining, 4500, 'never above the pool');
});

t.test('redirect URIs', async (t) => {
  t.equal(validateRedirectUri('https://x.example/cb'), 'https://x.example/cb');
  t.equal(validateRedirectUri('http://127.0.0.1:8/cb'), 'http://127.0.0.1:8/cb');
  for (const bad of ['http://x.example/cb', 'ftp://x/cb', 'https://x/cb#f', 42, '', 'http://127.0.0.1.evil.example/']) {
    t.equal(code(() => validateRedirectUri(bad)), 'INVALID_PARAMS', String(bad));
  }
  t.equal(withQuery('https://x.example/cb?a=1', { code: 'c d', state: undefined }), 'https://x.example/cb?a=1&code=c+d');
});

t.test('PKCE S256 (RFC 7636 appendix B)', async (t) => {
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  t.equal(createHash('sha256').update(verifier).digest('base64url'), 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
  t.ok(verifyS256(verifier, 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'));
  t.notOk(verifyS256(verifier.slice(1), 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'));
  t.notOk(verifyS256('short', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'));
  t.notOk(isS256Challenge('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c='));
});

t.test('scopes', async (t) => {
  t.same(parseScopeParam('write, identity read  write'), ['identity', 'read', 'write']);
  t.equal(code(() => parseScopeParam('read admin')), 'INVALID_SCOPE');
  t.equal(code(() => parseScopeParam(' , ')), 'INVALID_SCOPE');
  t.ok(allows(['identity'], 'account:read'));
  t.notOk(allows(['write'], 'account:read'), 'read/write exclude account information');
  t.notOk(allows(['write'], 'config:read'), 'read/write exclude config vars');
  t.ok(allows(['read-protected'], 'config:read'));
  t.notOk(allows(['read-protected'], 'config:write'));
  t.notOk(allows(['write-protected'], 'oauth:write'));
  t.same(scopesGranting('config:read'), ['read-protected', 'write-protected', 'global']);
  t.same(parseScopeArray(undefined), ['global']);
  t.equal(parseExpiresIn(' 60 '), 60_000);
  t.equal(parseExpiresIn(null), null);
  t.equal(code(() => parseExpiresIn('1e3')), 'INVALID_PARAMS');
});

t.test('tokens', async (t) => {
  const v = newToken();
  t.match(v, /^SVC-[A-Za-z0-9_-]{61}$/);
  t.equal(redactToken(v), 'SVC-**********' + v.slice(-4));
});
