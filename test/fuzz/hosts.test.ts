/**
 * Fuzzes every route of every host (registry with /token, API, auth, upload) over raw sockets:
 * random lengths up to 64 KiB in every path parameter, query parameter and header, random and
 * unknown methods, duplicate headers (Content-Length included), random bodies. Asserts that every
 * request gets a response (no connection closed without one), that none is a 5xx (but 501 for a
 * method outside the listener's IMPLEMENTED_METHODS, RFC 9110 §9.1), and that the
 * state an account can see (catalog, tags, apps, teams, clients, authorizations) is unchanged:
 * valid credentials go only with reads and with writes to paths that name nothing that exists.
 *
 * Bounded: FUZZ_COUNT requests per host (default 250) and FUZZ_SECONDS in all (default 40).
 * Seeded: FUZZ_SEED (default random); the seed is printed at the start and in every failure.
 */
import t from 'tap';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startSpawned } from '../helpers/harness.js';
import { bearer, basic, createApp, http } from '../helpers/http.js';
import { rawExchange } from '../helpers/raw.js';
import { snapshot } from '../helpers/snapshot.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';
import { API_ROUTES } from '../../server/api/routes.js';
import { authRouter } from '../../server/auth-host/routes.js';
import { REGISTRY_ROUTES } from '../../server/registry/routes.js';
import { IMPLEMENTED_METHODS } from '../../server/http/h1-head.js';

const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const COUNT = Number(process.env.FUZZ_COUNT ?? 250);
const DEADLINE = Date.now() + Number(process.env.FUZZ_SECONDS ?? 40) * 1000;
const CONCURRENCY = 6;
t.comment(`fuzz seed ${seed} (rerun with FUZZ_SEED=${seed})`);

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function prng(s: number): () => number {
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
const rng = prng(seed);
const int = (n: number) => Math.floor(rng() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;

/**
 * Lengths: in each request one component (path parameter, query value or header) is "the long
 * one" (see `request`): 2,000–16,000 characters mostly (past LMDB's 1,978-byte key limit but
 * inside the 16 KiB head limit, so handlers see it), up to 64 KiB sometimes; the rest are short.
 */
let longLeft = 0;
function length(): number {
  if (longLeft > 0 && rng() < 0.5) {
    longLeft--;
    return rng() < 0.8 ? 2000 + int(14_000) : int(64 * 1024 + 1);
  }
  return rng() < 0.7 ? int(40) : 40 + int(400);
}
const SAFE = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-~';
const SPECIAL = ['/', '%2F', '%00', '%1F', '%ZZ', '%', '..', ':', '@', '%C3%A9', '%FF', '+', '*', '=', '&', ';', ',', '\'', '"', '<', '>', '\\', '|', '^', '`', '{', '}'];
/**
 * A path or query fragment: URL-safe characters only (so a long one still matches its route and
 * reaches the handler), or mixed with percent escapes and separators.
 */
function fragment(n = length()): string {
  const special = rng() < 0.3 ? 0.1 : 0;
  let s = '';
  while (s.length < n) s += rng() >= special ? SAFE[int(SAFE.length)] : pick(SPECIAL);
  return s.slice(0, Math.max(n, 1));
}
/** A header value: printable ASCII, sometimes obs-text bytes (latin1). */
function headerValue(n = length()): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(rng() < 0.97 ? 0x20 + int(95) : 0x80 + int(128));
  return s.trim();
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'FOO', 'get', 'M-SEARCH', 'CONNECT'];
const READS = new Set(['GET', 'HEAD']);
const HEADER_NAMES = ['accept', 'authorization', 'content-type', 'content-range', 'range', 'cookie', 'if-none-match', 'x-http-method-override',
  'request-id', 'docker-content-digest', 'origin', 'referer', 'user-agent', 'accept-encoding', 'expect', 'x-forwarded-for', 'x-random'];
const QUERY_NAMES = ['n', 'last', 'digest', 'mount', 'from', 'scope', 'service', 'account', 'client_id', 'redirect_uri', 'response_type', 'state',
  'code_challenge', 'code_challenge_method', 'artifactType', '_state', 'return_to', 'x'];

const tmp = tempDir();
// Spawned: the 40-second budget is shared by the four hosts, and with the server on the test's own
// event loop (in-process) the first hosts used it all on a busy machine, leaving the upload host none.
const server = await startSpawned({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
const V3 = { accept: 'application/vnd.slipway+json; version=3', ...bearer(key), 'content-type': 'application/json' };
// Something to lose: an app with a pushed image, a team and an OAuth client.
if ((await createApp(server.urls.api, key, 'fuzz')).status !== 201) throw new Error('cannot create the app');
await pushBuiltImage({ registry: server.urls.registry, auth: basic('_', key) }, 'fuzz/web', 'v1', await buildImage(join(tmp.dir, 'img'), sampleSpec()));
if ((await http('POST', `${server.urls.api}/teams`, { headers: V3, body: JSON.stringify({ name: 'fuzzteam' }) })).status !== 201) throw new Error('cannot create the team');
if ((await http('POST', `${server.urls.api}/oauth/clients`, { headers: V3, body: JSON.stringify({ name: 'fuzz', redirect_uri: 'https://example.com/cb' }) })).status !== 201) throw new Error('cannot create the client');
const before = await snapshot(server.urls, key);

/** Path parameters that sometimes name real things. */
const REAL: Record<string, string[]> = { name: ['fuzz/web'], app: ['fuzz'], team: ['fuzzteam'], reference: ['v1'], id: ['~'] };
let namedReal = false;
function fill(pattern: string): string {
  namedReal = false;
  return pattern.replace(/:([a-z]+)/g, (_, p: string) => {
    if (rng() < 0.2 && REAL[p]) {
      namedReal = true;
      return pick(REAL[p]!);
    }
    return fragment();
  });
}

interface Built { text: string; head: boolean; summary: string; method: string }
function request(url: string, pattern: string, routeMethod: string): Built {
  const method = rng() < 0.6 ? routeMethod : pick(METHODS);
  longLeft = rng() < 0.7 ? 1 : 0;
  let path = fill(pattern);
  if (rng() < 0.6) {
    const q = Array.from({ length: 1 + int(3) }, () => `${rng() < 0.8 ? pick(QUERY_NAMES) : fragment(int(20))}=${fragment()}`);
    path += '?' + q.join('&');
  }
  const lines: string[] = [];
  if (rng() < 0.97) lines.push(`Host: ${new URL(url).host}`);
  longLeft = rng() < 0.3 ? 1 : longLeft; // sometimes a long header, whatever the path got
  for (let i = int(5); i > 0; i--) {
    const name = pick(HEADER_NAMES);
    const value = name === 'authorization' && rng() < 0.5 ? `${pick(['Basic', 'Bearer', 'Digest', ''])} ${headerValue()}` : headerValue();
    lines.push(`${name}: ${value}`);
    if (rng() < 0.2) lines.push(`${name}: ${headerValue()}`); // duplicate
  }
  // Valid credentials: on reads, and on writes to a path naming nothing that exists (a random
  // app, team, repository…: the handler runs and refuses). Never on collections (POST /apps).
  const harmless = READS.has(method) || (pattern.includes(':') && !namedReal);
  if (harmless && rng() < 0.5) lines.push(`Authorization: ${rng() < 0.5 ? `Bearer ${key}` : `Basic ${Buffer.from(`_:${key}`).toString('base64')}`}`);
  let body = '';
  if (!READS.has(method) && rng() < 0.7) body = rng() < 0.5 ? JSON.stringify({ name: fragment(int(100)), [fragment(10)]: fragment() }) : headerValue(int(4096));
  if (rng() < 0.15) {
    lines.push('Transfer-Encoding: chunked');
    body = body ? `${Buffer.byteLength(body, 'latin1').toString(16)}\r\n${body}\r\n0\r\n\r\n` : '0\r\n\r\n';
  } else if (body || rng() < 0.3) {
    const cl = Buffer.byteLength(body, 'latin1');
    lines.push(`Content-Length: ${cl}`);
    if (rng() < 0.2) lines.push(`Content-Length: ${rng() < 0.5 ? cl : cl + 1 + int(100)}`);
  }
  const text = `${method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
  const summary = `${method} ${path.slice(0, 120)}${path.length > 120 ? `… (${path.length} chars)` : ''} headers=[${lines.map((l) => `${l.slice(0, l.indexOf(':'))}(${l.length})`).join(' ')}] body=${body.length}`;
  return { text, head: method === 'HEAD', summary, method };
}

const hosts = [
  { name: 'registry', url: server.urls.registry, routes: REGISTRY_ROUTES },
  { name: 'API', url: server.urls.api, routes: API_ROUTES.map((r) => ({ method: r.method, pattern: r.path })) },
  { name: 'auth', url: server.urls.auth, routes: authRouter.routes() },
  { name: 'upload', url: server.urls.upload, routes: REGISTRY_ROUTES },
];

for (const h of hosts) {
  t.test(`${h.name} host: ${COUNT} random requests`, async (t) => {
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    const worker = async () => {
      while (sent < COUNT && Date.now() < DEADLINE) {
        const i = sent++;
        const route = pick(h.routes);
        const req = request(h.url, route.pattern, route.method);
        const r = await rawExchange(h.url, Buffer.from(req.text, 'latin1'), { expect: 1, head: [req.head], timeoutMs: 15_000 });
        const status = r.responses[0]?.status;
        if (status !== undefined) statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === undefined) failures.push(`#${i} no response${r.closed ? ' (closed)' : ' (timed out)'}: ${req.summary}`);
        else if (status === 501 && !IMPLEMENTED_METHODS.has(req.method)) continue; // a method no route implements (RFC 9110 §9.1)
        else if (status >= 500) failures.push(`#${i} ${status}: ${req.summary} → ${r.responses[0]!.body.slice(0, 200)}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    t.ok(sent > 0, `${sent} requests sent`);
    t.comment(`statuses: ${[...statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ')}`);
    t.same(failures, [], `every request answered below 500 (seed ${seed})`);
  });
}

t.test('nothing changed', async (t) => {
  t.equal(await snapshot(server.urls, key), before, `state unchanged (seed ${seed})`);
});
