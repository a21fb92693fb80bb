/**
 * What every host (registry, API, auth, upload) answers to requests a normal client never sends,
 * over raw sockets: differing duplicate Content-Length (request smuggling) is 400 and the
 * connection is closed without answering the smuggled request; unknown methods are 405 with
 * Allow; oversized heads are 431. Never a silent close. The same smuggling attempt is also refused
 * by the uWebSockets.js listener (SLIPWAY_LISTENER=uws).
 */
import t from 'tap';
import { tempDir } from '../helpers/server.js';
import { startInProcess, type InProcessSlipway } from '../helpers/harness.js';
import { rawExchange } from '../helpers/raw.js';
import { uwsUnavailable } from '../../server/http/uws.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });

/** A path on each host that exists, with the methods it allows. */
const HOSTS = (s: InProcessSlipway) => [
  { name: 'registry', url: s.urls.registry, path: '/v2/', allow: /GET, HEAD/ },
  { name: 'API', url: s.urls.api, path: '/apps', allow: /GET, POST|POST, GET/ },
  { name: 'auth', url: s.urls.auth, path: '/login', allow: /GET, POST|POST, GET/ },
  { name: 'upload', url: s.urls.upload, path: '/v2/', allow: /GET, HEAD/ },
];

const host = (url: string) => `Host: ${new URL(url).host}\r\n`;

/** Duplicate differing Content-Length followed by a request only a length-5 reading would see. */
function smuggle(url: string, path: string): string {
  return `POST ${path} HTTP/1.1\r\n${host(url)}Content-Length: 5\r\nContent-Length: 40\r\n\r\nhello` +
    `GET ${path}?smuggled=1 HTTP/1.1\r\n${host(url)}\r\n`;
}

for (const h of HOSTS(server)) {
  t.test(`${h.name} host`, async (t) => {
    const dup = await rawExchange(h.url, smuggle(h.url, h.path));
    t.same(dup.responses.map((r) => r.status), [400], 'one response: 400 (the smuggled request is not answered)');
    t.ok(dup.closed, 'connection closed');
    const both = await rawExchange(h.url, `POST ${h.path} HTTP/1.1\r\n${host(h.url)}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`);
    t.same(both.responses.map((r) => r.status), [400], 'Content-Length with Transfer-Encoding: 400');
    t.ok(both.closed);
    const same = await rawExchange(h.url, `GET ${h.path} HTTP/1.1\r\n${host(h.url)}Content-Length: 0\r\nContent-Length: 0\r\n\r\n`, { expect: 1 });
    t.equal(same.responses.length, 1, 'identical repeated Content-Length is one length');
    t.not(same.responses[0]?.status, 400);
    for (const method of ['PROPFIND', 'FOO']) {
      const r = await rawExchange(h.url, `${method} ${h.path} HTTP/1.1\r\n${host(h.url)}\r\n`, { expect: 1 });
      t.equal(r.responses[0]?.status, 405, `${method}: 405`);
      t.match(r.responses[0]?.headers.allow ?? '', h.allow, `${method}: Allow names the methods`);
    }
    const oversized: Array<[string, string]> = [
      ['a 200 KB header', `X-Big: ${'a'.repeat(200_000)}\r\n`],
      ['500 header fields', Array.from({ length: 500 }, (_, i) => `X-H${i}: v\r\n`).join('')],
      ['a 100 KB bearer token', `Authorization: Bearer ${'a'.repeat(100_000)}\r\n`],
    ];
    for (const [what, fields] of oversized) {
      const r = await rawExchange(h.url, `GET ${h.path} HTTP/1.1\r\n${host(h.url)}${fields}\r\n`);
      t.same(r.responses.map((x) => x.status), [431], `${what}: 431`);
      t.ok(r.closed, `${what}: then closed`);
    }
  });
}

// Node 22+ has no uWebSockets.js binary here (server/http/uws.ts says why; test/hosts/uws-availability.test.ts).
t.test('the uWebSockets.js listener refuses the same smuggling attempt', { skip: uwsUnavailable() ?? false }, async (t) => {
  const dir = tempDir();
  const uws = await startInProcess({ dataDir: dir.dir, env: { SLIPWAY_LISTENER: 'uws' } });
  t.teardown(async () => { await uws.stop(); dir.cleanup(); });
  for (const h of HOSTS(uws).slice(0, 3)) {
    const dup = await rawExchange(h.url, smuggle(h.url, h.path));
    t.same(dup.responses.map((r) => r.status), [400], `${h.name}: one response, 400`);
    t.ok(dup.closed, `${h.name}: connection closed`);
    const both = await rawExchange(h.url, `POST ${h.path} HTTP/1.1\r\n${host(h.url)}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`);
    // uWS 20.30 closes this one natively, before any handler runs (docs/decisions.md "HTTP listeners").
    t.same(both.responses, [], `${h.name}: Content-Length with Transfer-Encoding: nothing processed`);
    t.ok(both.closed, `${h.name}: Content-Length with Transfer-Encoding: closed`);
    const ok = await rawExchange(h.url, `GET ${h.path} HTTP/1.1\r\n${host(h.url)}\r\n`, { expect: 1 });
    t.equal(ok.responses.length, 1, `${h.name}: a normal request on a new connection is answered`);
  }
});
