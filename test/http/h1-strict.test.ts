/**
 * The five leniencies an adversarial pass found in the own HTTP/1.1 listener, each reproduced the
 * way it was found (raw sockets against a running Slipway) and each seen by a user as a changed
 * answer or changed state:
 * 1. a chunked body's trailer section is parsed as field lines: a request hidden in it, a line
 *    without a colon, with NUL, folded, `X : a`, and Content-Length / Transfer-Encoding / Host
 *    trailers are 400 and the request does nothing;
 * 2. methods are case-sensitive: `dElEtE /apps/<app>` is 501 and the app stays;
 * 3. the chunk-size line is strict: `5 junk`, `5\t`, `5;a="\x01"` are 400;
 * 4. HTTP/1.1 without Host is 400; `Content-Length: 2, 2` and a repeated identical
 *    Content-Length are 400;
 * 5. absolute-form targets (`GET http://host:port/v2/ HTTP/1.1`) are served on every host, with
 *    the authority checked (http/https, a host, no userinfo).
 */
import t, { type Test } from 'tap';
import { tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { bearer, createApp, http } from '../helpers/http.js';
import { rawExchange, type RawResult } from '../helpers/raw.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
const api = server.urls.api;
const apiHost = new URL(api).host;
const V3 = { ...bearer(key), accept: 'application/vnd.slipway+json; version=3' };
const authLines = `Host: ${apiHost}\r\nAuthorization: Bearer ${key}\r\nAccept: application/vnd.slipway+json; version=3\r\nContent-Type: application/json\r\n`;

const appExists = async (name: string) => (await http('GET', `${api}/apps/${name}`, { headers: V3 })).status === 200;
/** A chunked body carrying `{"name": app}` in one chunk whose size line is `sizeLine(size)`, then `tail` (last chunk and trailers). */
const createAppChunked = (app: string, sizeLine: (hex: string) => string, tail: string) => {
  const json = JSON.stringify({ name: app });
  return `POST /apps HTTP/1.1\r\n${authLines}Transfer-Encoding: chunked\r\n\r\n${sizeLine(json.length.toString(16))}\r\n${json}\r\n${tail}`;
};
/** One response, the listener's 400 (text/plain, naming the reason), then the connection closed. */
function refused(t: Test, r: RawResult, status: number, reason: RegExp, what: string) {
  t.same(r.responses.map((x) => x.status), [status], `${what}: one response, ${status}`);
  t.match(r.responses[0]?.body ?? '', reason, `${what}: the reason`);
  t.ok(r.closed, `${what}: connection closed`);
}

t.test('1. trailer fields are parsed and validated; a request hidden in the trailer section is refused', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['a smuggled request', 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n', /malformed header field/],
    ['a line without a colon', 'X-No-Colon\r\n\r\n', /malformed header field/],
    ['NUL in a value', 'X-Nul: a\x00b\r\n\r\n', /invalid character/],
    ['an obs-fold', 'X-Fold: a\r\n folded\r\n\r\n', /malformed header field/],
    ['whitespace before the colon', 'X : a\r\n\r\n', /malformed header field/],
    ['Content-Length', 'Content-Length: 5\r\n\r\n', /content-length is not allowed in a trailer/],
    ['Transfer-Encoding', 'Transfer-Encoding: chunked\r\n\r\n', /transfer-encoding is not allowed in a trailer/],
    ['Host', 'Host: elsewhere\r\n\r\n', /host is not allowed in a trailer/],
    ['Connection', 'Connection: close\r\n\r\n', /connection is not allowed in a trailer/],
  ];
  let n = 0;
  for (const [what, trailer, reason] of cases) {
    const app = `trailer${n++}`;
    const r = await rawExchange(api, createAppChunked(app, (h) => h, `0\r\n${trailer}`));
    refused(t, r, 400, reason, what);
    t.notOk(await appExists(app), `${what}: the app was not created`);
    t.notOk(r.text.includes('/smuggled'), `${what}: nothing after it was answered`);
  }
  const ok = await rawExchange(api, createAppChunked('trailerok', (h) => h, '0\r\nX-Checksum: abc\r\nServer-Timing: x;dur=1\r\n\r\n') + `GET /apps/trailerok HTTP/1.1\r\n${authLines}\r\n`, { expect: 2 });
  t.same(ok.responses.map((x) => x.status), [201, 200], 'valid trailer fields are accepted (and dropped); the next request is served');
});

t.test('2. methods are case-sensitive: dElEtE does not run DELETE', async (t) => {
  t.equal((await createApp(api, key, 'casefold')).status, 201);
  for (const method of ['dElEtE', 'delete', 'Delete']) {
    const r = await rawExchange(api, `${method} /apps/casefold HTTP/1.1\r\n${authLines}\r\n`);
    refused(t, r, 501, /method not implemented/, method);
    t.ok(await appExists('casefold'), `${method}: the app still exists`);
  }
  const propfind = await rawExchange(api, `PROPFIND /apps/casefold HTTP/1.1\r\n${authLines}\r\n`);
  refused(t, propfind, 501, /method not implemented/, 'PROPFIND (no route implements it)');
  const trace = await rawExchange(api, `TRACE /apps/casefold HTTP/1.1\r\n${authLines}\r\n`, { expect: 1 });
  t.equal(trace.responses[0]?.status, 405, 'TRACE, implemented by no route: 405');
  t.match(trace.responses[0]?.headers.allow ?? '', /DELETE/, 'with Allow');
  const del = await rawExchange(api, `DELETE /apps/casefold HTTP/1.1\r\n${authLines}\r\n`, { expect: 1 });
  t.equal(del.responses[0]?.status, 200, 'DELETE deletes');
  t.notOk(await appExists('casefold'));
});

t.test('3. the chunk-size line is strict', async (t) => {
  const lines: Array<[string, (hex: string) => string]> = [
    ['"5 junk"', (h) => `${h} junk`],
    ['"5\\t"', (h) => `${h}\t`],
    ['"5;a=\\"\\x01\\""', (h) => `${h};a="\x01"`],
    ['"5 ;a"', (h) => `${h} ;a`],
    ['"5;a b"', (h) => `${h};a b`],
  ];
  let n = 0;
  for (const [what, line] of lines) {
    const app = `chunksize${n++}`;
    const r = await rawExchange(api, createAppChunked(app, line, '0\r\n\r\n'));
    refused(t, r, 400, /malformed chunk/, what);
    t.notOk(await appExists(app), `${what}: the app was not created`);
  }
  const ext = await rawExchange(api, createAppChunked('chunkext', (h) => `0${h};a=b;c="d \\" e"`, '0\r\n\r\n'), { expect: 1 });
  t.equal(ext.responses[0]?.status, 201, 'leading zeros and valid extensions (token and quoted-string values) are accepted');
});

t.test('4. Host is required; Content-Length is one field line of digits', async (t) => {
  for (const [name, url] of Object.entries(server.urls)) {
    if (name === 'admin') continue; // node:http, not the own listener
    const r = await rawExchange(url, 'GET /v2/ HTTP/1.1\r\n\r\n');
    refused(t, r, 400, /no Host field/, `${name} host: HTTP/1.1 without Host`);
    const two = await rawExchange(url, `GET /v2/ HTTP/1.1\r\nHost: ${new URL(url).host}\r\nHost: other\r\n\r\n`);
    refused(t, two, 400, /more than one Host field/, `${name} host: two Host lines`);
  }
  const json = JSON.stringify({ name: 'clrepeat' });
  for (const [what, fields] of [['"N, N"', `Content-Length: ${json.length}, ${json.length}`], ['two identical lines', `Content-Length: ${json.length}\r\nContent-Length: ${json.length}`]]) {
    const r = await rawExchange(api, `POST /apps HTTP/1.1\r\n${authLines}${fields}\r\n\r\n${json}`);
    refused(t, r, 400, /invalid Content-Length/, what!);
    t.notOk(await appExists('clrepeat'), `${what}: the app was not created`);
  }
  const one = await rawExchange(api, 'GET /v2/ HTTP/1.0\r\n\r\n', { expect: 1 });
  t.not(one.responses[0]?.status, 400, 'HTTP/1.0 needs no Host');
});

t.test('5. absolute-form targets are served on every host, the authority checked', async (t) => {
  const probes: Record<string, string> = { registry: '/v2/', api: '/apps', auth: '/login', upload: '/v2/' };
  for (const [name, path] of Object.entries(probes)) {
    const url = server.urls[name as keyof typeof server.urls];
    const { host, protocol } = new URL(url);
    const fields = `${authLines.replace(`Host: ${apiHost}`, `Host: ${host}`)}\r\n`;
    const origin = await rawExchange(url, `GET ${path} HTTP/1.1\r\n${fields}`, { expect: 1 });
    const absolute = await rawExchange(url, `GET ${protocol}//${host}${path} HTTP/1.1\r\n${fields}`, { expect: 1 });
    t.not(absolute.responses[0]?.status, 400, `${name} host: GET ${protocol}//${host}${path} is not refused`);
    t.equal(absolute.responses[0]?.status, origin.responses[0]?.status, `${name} host: answered as GET ${path} (${origin.responses[0]?.status})`);
  }
  const r = await rawExchange(api, `GET HTTP://${apiHost.toUpperCase()}/apps?x=1 HTTP/1.1\r\n${authLines}\r\n`, { expect: 1 });
  t.equal(r.responses[0]?.status, 200, 'scheme and host are case-insensitive; the query is kept');
  for (const target of [`ftp://${apiHost}/apps`, `http://user@${apiHost}/apps`, 'http:///apps', `http://${apiHost}/apps#frag`, '*', apiHost]) {
    const bad = await rawExchange(api, `GET ${target} HTTP/1.1\r\n${authLines}\r\n`);
    refused(t, bad, 400, /malformed request target/, target);
  }
});
