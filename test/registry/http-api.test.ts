/**
 * The registry HTTP API V2 through the wire: authentication and the token flow, blob uploads
 * (monolithic, chunked, streamed, mounted), pulls with Range, manifests, tags, catalog, and
 * every refusal with its exact distribution error code; a refusal changes nothing.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, CLI } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, bearer, createApp, errCode, errMessage, http } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { assertBlobServed, pushBlob, pushBuiltImage, putManifest, startUpload, withDigest, type Target } from '../helpers/registry.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
const reg = server.urls.registry;
const me: Target = { registry: reg, auth: basic('_', key) };
await createApp(server.urls.api, key, 'myapp');

// A second account with its own app, made with the operator CLI on the same data directory.
const other = JSON.parse(execFileSync(process.execPath, [CLI, 'account', 'create', '--email', 'other@example.com', '--json', '--data', tmp.dir], { encoding: 'utf8' }));
await createApp(server.urls.api, other.api_key, 'otherapp');
const them: Target = { registry: reg, auth: basic('_', other.api_key) };

/** Pushes a sample image by HTTP; returns it. */
async function pushImage(target: Target, name: string, tag: string, spec = sampleSpec()) {
  const img = await buildImage(join(tmp.dir, `img-${randomBytes(4).toString('hex')}`), spec);
  return pushBuiltImage(target, name, tag, img);
}

t.test('authentication', async (t) => {
  const anon = await http('GET', `${reg}/v2/`);
  t.equal(anon.status, 401);
  t.equal(anon.headers['www-authenticate'], `Bearer realm="${reg}/token",service="${new URL(reg).host}"`);
  t.equal(anon.headers['docker-distribution-api-version'], 'registry/2.0');
  t.equal((await http('GET', `${reg}/v2/`, { headers: basic('_', key) })).status, 200, '_ + API key');
  t.equal((await http('GET', `${reg}/v2/`, { headers: basic(server.email!, key) })).status, 200, 'e-mail + API key');
  t.equal((await http('GET', `${reg}/v2/`, { headers: basic('other@example.com', key) })).status, 401, "someone else's e-mail");
  t.equal((await http('GET', `${reg}/v2/`, { headers: basic('_', 'wrong') })).status, 401);
  t.equal((await http('GET', `${reg}/v2/`, { headers: basic(server.email!, server.password!) })).status, 401, 'a password is not a registry credential');
  t.equal((await http('GET', `${reg}/v2/`, { headers: bearer(key) })).status, 200, 'Bearer API token');
  const noCreds = await http('GET', `${reg}/v2/myapp/web/tags/list`);
  t.equal(noCreds.status, 401);
  t.match(noCreds.headers['www-authenticate'], /scope="repository:myapp\/web:pull"/);
});

t.test('token flow: repeated and space-separated scopes, insufficient_scope', async (t) => {
  const url = `${reg}/token?service=x&scope=${encodeURIComponent('repository:myapp/web:pull repository:otherapp/web:pull,push')}&scope=repository:myapp/worker:pull,push`;
  const tok = await http('GET', url, { headers: basic('_', key) });
  t.equal(tok.status, 200);
  t.equal(tok.json.token, tok.json.access_token);
  t.equal(tok.json.expires_in, 300);
  const claims = JSON.parse(Buffer.from(tok.json.token.split('.')[0], 'base64url').toString());
  t.same(claims.access, { 'myapp/web': ['pull'], 'myapp/worker': ['pull', 'push'] }, 'grants only what the caller may do');
  const withToken: Target = { registry: reg, auth: bearer(tok.json.token) };
  t.equal((await pushBlob(withToken, 'myapp/worker', randomBytes(100))).status, 201, 'push with a push-scoped token');
  const denied = await pushBlob(withToken, 'myapp/web', randomBytes(100));
  t.equal(denied.status, 401);
  t.match(denied.headers['www-authenticate'], /scope="repository:myapp\/web:pull,push",error="insufficient_scope"/);
  t.equal((await http('GET', `${reg}/token?scope=repository:myapp/web:pull`)).status, 401, 'token endpoint needs credentials');
  const forged = tok.json.token.slice(0, -2) + 'xx';
  t.equal((await http('GET', `${reg}/v2/`, { headers: bearer(forged) })).status, 401, 'tampered token');
});

t.test('blobs: monolithic push, HEAD, GET, Range', async (t) => {
  const bytes = randomBytes(300_000);
  const d = sha256(bytes);
  const r = await pushBlob(me, 'myapp/web', bytes);
  t.equal(r.status, 201);
  t.equal(r.headers['docker-content-digest'], d);
  t.equal(r.headers.location, `${reg}/v2/myapp/web/blobs/${d}`);
  await assertBlobServed(t, me, 'myapp/web', bytes);
  t.equal((await http('HEAD', `${reg}/v2/myapp/worker/blobs/${d}`, { headers: me.auth })).status, 404, 'not linked to another repository');
  t.equal((await http('GET', `${reg}/v2/otherapp/web/blobs/${d}`, { headers: them.auth })).status, 404);
});

t.test('a wrong digest stores nothing', async (t) => {
  const bytes = randomBytes(50_000);
  const wrong = sha256(Buffer.from('something else'));
  const loc = await startUpload(me, 'myapp/web');
  const r = await http('PUT', withDigest(loc, wrong), { body: bytes, headers: { 'content-length': String(bytes.length) } });
  t.equal(r.status, 400);
  t.equal(errCode(r), 'DIGEST_INVALID');
  t.match(errMessage(r), /does not match uploaded content/);
  t.equal((await http('HEAD', `${reg}/v2/myapp/web/blobs/${wrong}`, { headers: me.auth })).status, 404);
  t.equal((await http('HEAD', `${reg}/v2/myapp/web/blobs/${sha256(bytes)}`, { headers: me.auth })).status, 404);
  t.notOk(existsSync(join(tmp.dir, 'blobs', 'sha256', sha256(bytes).slice(7, 9), sha256(bytes).slice(7))), 'no blob file');
  t.equal(errCode(await http('GET', loc)), 'BLOB_UPLOAD_UNKNOWN', 'session discarded');
  const mono = await pushBlob(me, 'myapp/web', bytes, wrong);
  t.equal(errCode(mono), 'DIGEST_INVALID');
});

t.test('chunked upload with Content-Range; out-of-order chunk gets 416', async (t) => {
  const bytes = randomBytes(300);
  const loc = await startUpload(me, 'myapp/web');
  t.match(loc, /^http:\/\/127\.0\.0\.1:\d+\/v2\/myapp\/web\/blobs\/uploads\/[a-f0-9]{32}\?_state=/, 'Location on the upload host');
  const patch = (start: number, end: number) => http('PATCH', loc, { body: bytes.subarray(start, end + 1), headers: { 'content-range': `${start}-${end}`, 'content-length': String(end - start + 1) } });
  const p1 = await patch(0, 99);
  t.equal(p1.status, 202);
  t.equal(p1.headers.range, '0-99');
  const bad = await patch(200, 299);
  t.equal(bad.status, 416);
  t.equal(errCode(bad), 'BLOB_UPLOAD_INVALID');
  t.equal(bad.headers.range, '0-99', 'current range reported');
  const status = await http('GET', loc);
  t.equal(status.status, 204);
  t.equal(status.headers.range, '0-99', 'the refused chunk changed nothing');
  t.equal((await patch(100, 199)).status, 202);
  t.equal((await patch(200, 299)).headers.range, '0-299');
  const done = await http('PUT', withDigest(loc, sha256(bytes)));
  t.equal(done.status, 201);
  const get = await http('GET', `${reg}/v2/myapp/web/blobs/${sha256(bytes)}`, { headers: me.auth });
  t.ok(get.bytes.equals(bytes));
});

t.test('streamed PATCH (chunked transfer encoding) and final chunk in PUT', async (t) => {
  const parts = [randomBytes(70_000), randomBytes(130_000), randomBytes(5)];
  const all = Buffer.concat(parts);
  const loc = await startUpload(me, 'myapp/web');
  async function* gen() { for (const p of parts.slice(0, 2)) yield p; }
  const r = await http('PATCH', loc, { body: gen() as any });
  t.equal(r.status, 202);
  t.equal(r.headers.range, `0-${parts[0]!.length + parts[1]!.length - 1}`);
  const done = await http('PUT', withDigest(loc, sha256(all)), { body: parts[2], headers: { 'content-length': '5' } });
  t.equal(done.status, 201);
  t.equal(done.headers['docker-content-digest'], sha256(all));
});

t.test('upload sessions: capability, status, cancel', async (t) => {
  const loc = await startUpload(me, 'myapp/web');
  const tampered = loc.replace(/_state=[^&]+/, '_state=AAAA');
  t.equal((await http('GET', tampered)).status, 401, 'a tampered capability needs credentials');
  t.equal((await http('GET', tampered, { headers: them.auth })).status, 403, "and another account's are refused");
  const id = new URL(loc).pathname.split('/').pop();
  t.equal((await http('GET', `${reg}/v2/myapp/web/blobs/uploads/${id}`, { headers: me.auth })).status, 204, 'credentials work on the registry host too');
  t.equal((await http('GET', loc.replace('myapp/web', 'myapp/worker'))).status, 401, 'capability is bound to its repository');
  t.equal((await http('DELETE', loc)).status, 204);
  t.equal(errCode(await http('GET', loc)), 'BLOB_UPLOAD_UNKNOWN');
  t.equal(errCode(await http('PUT', loc)), 'BLOB_UPLOAD_UNKNOWN');
  const fresh = await startUpload(me, 'myapp/web');
  const noDigest = await http('PUT', fresh);
  t.equal(errCode(noDigest), 'DIGEST_INVALID');
  t.equal((await http('GET', fresh)).status, 204, 'a PUT without digest keeps the session');
});

t.test('cross-repository mount within what the caller may read', async (t) => {
  const bytes = randomBytes(1000);
  const d = sha256(bytes);
  await pushBlob(me, 'myapp/web', bytes);
  const m = await http('POST', `${reg}/v2/myapp/release/blobs/uploads/?mount=${d}&from=myapp/web`, { headers: me.auth });
  t.equal(m.status, 201);
  t.equal(m.headers['docker-content-digest'], d);
  t.equal((await http('HEAD', `${reg}/v2/myapp/release/blobs/${d}`, { headers: me.auth })).status, 200);
  const theirs = await http('POST', `${reg}/v2/otherapp/web/blobs/uploads/?mount=${d}&from=myapp/web`, { headers: them.auth });
  t.equal(theirs.status, 202, 'no read access to the source: a normal upload session instead');
  t.equal((await http('HEAD', `${reg}/v2/otherapp/web/blobs/${d}`, { headers: them.auth })).status, 404);
});

t.test('names, references and digests', async (t) => {
  const cases: Array<[string, string, number, string]> = [
    ['GET', '/v2/MyApp/web/manifests/latest', 400, 'NAME_INVALID'],
    ['GET', '/v2/myapp/web/extra/manifests/latest', 400, 'NAME_INVALID'],
    ['GET', '/v2/myapp/manifests/latest', 400, 'NAME_INVALID'],
    // A write to a malformed name: DENIED, a code docker does not retry (server/registry/routes.ts).
    ['POST', '/v2/a/web/blobs/uploads/', 403, 'DENIED'],
    ['PUT', '/v2/myapp/manifests/latest', 403, 'DENIED'],
    ['GET', '/v2/nosuchapp/web/manifests/latest', 403, 'DENIED'],
    ['GET', '/v2/otherapp/web/manifests/latest', 403, 'DENIED'],
    ['GET', '/v2/myapp/web/blobs/sha256:xyz', 400, 'DIGEST_INVALID'],
    ['GET', '/v2/myapp/web/blobs/md5:d41d8cd98f00b204e9800998ecf8427e', 400, 'DIGEST_INVALID'],
    ['GET', '/v2/myapp/web/manifests/bad%20tag', 404, 'MANIFEST_UNKNOWN'], // GET/HEAD: conformance suite; PUT stays 400 (test/hosts/protocol.test.ts)
    ['GET', '/v2/myapp/web/manifests/nosuchtag', 404, 'MANIFEST_UNKNOWN'],
    ['POST', '/v2/myapp/web/blobs/uploads/?digest=sha256:12', 400, 'DIGEST_INVALID'],
    ['GET', '/v2/myapp/web/tags/list?n=abc', 400, 'PAGINATION_NUMBER_INVALID'],
    ['PATCH', '/v2/myapp/web/manifests/latest', 405, 'UNSUPPORTED'],
    ['GET', '/v2/nope', 404, 'NAME_UNKNOWN'],
  ];
  for (const [method, path, status, code] of cases) {
    const r = await http(method, reg + path, { headers: me.auth });
    t.equal(r.status, status, `${method} ${path} status`);
    t.equal(errCode(r), code, `${method} ${path} code`);
    t.ok(errMessage(r).length > 10, `${method} ${path} explains itself: ${errMessage(r)}`);
  }
  const denied = await http('GET', `${reg}/v2/nosuchapp/web/manifests/latest`, { headers: me.auth });
  t.match(errMessage(denied), /app "nosuchapp" does not exist or you do not have access to it/);
  t.equal((await http('HEAD', `${reg}/v2/otherapp/web/manifests/latest`, { headers: me.auth })).status, 404, 'HEAD hides foreign repositories');
  const name = await http('GET', `${reg}/v2/myapp/web/extra/manifests/latest`, { headers: me.auth });
  t.match(errMessage(name), /<app>\/<process-type>/);
  // A HEAD cannot explain itself: 404, so a client goes on to the request whose answer does
  // (skopeo and podman start a push with a blob HEAD and showed a bare 400 before).
  t.equal((await http('HEAD', `${reg}/v2/myapp/blobs/sha256:${'a'.repeat(64)}`, { headers: me.auth })).status, 404, 'HEAD of a malformed name: 404');
  t.match(errMessage(await http('POST', `${reg}/v2/myapp/blobs/uploads/`, { headers: me.auth })), /invalid repository name "myapp": repositories are named <app>\/<process-type>/);
});

t.test('manifests: push, pull by tag and digest, conditional GET, delete', async (t) => {
  const img = await pushImage(me, 'myapp/web', 'v1');
  const byTag = await http('GET', `${reg}/v2/myapp/web/manifests/v1`, { headers: { ...me.auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
  t.equal(byTag.status, 200);
  t.ok(byTag.bytes.equals(img.manifest), 'exact bytes');
  t.equal(byTag.headers['content-type'], 'application/vnd.docker.distribution.manifest.v2+json');
  t.equal(byTag.headers['docker-content-digest'], img.manifestDigest);
  const head = await http('HEAD', `${reg}/v2/myapp/web/manifests/${img.manifestDigest}`, { headers: me.auth });
  t.equal(head.status, 200);
  t.equal(head.headers['content-length'], String(img.manifest.length));
  const cond = await http('GET', `${reg}/v2/myapp/web/manifests/v1`, { headers: { ...me.auth, 'if-none-match': `"${img.manifestDigest}"` } });
  t.equal(cond.status, 304);
  t.equal((await putManifest(me, 'myapp/web', 'v2', img.manifest)).status, 201, 'second tag');
  t.equal((await http('DELETE', `${reg}/v2/myapp/web/manifests/v2`, { headers: me.auth })).status, 202, 'delete a tag');
  t.equal((await http('GET', `${reg}/v2/myapp/web/manifests/v2`, { headers: me.auth })).status, 404);
  t.equal((await http('GET', `${reg}/v2/myapp/web/manifests/v1`, { headers: me.auth })).status, 200, 'the manifest stays');
  t.equal((await http('DELETE', `${reg}/v2/myapp/web/manifests/${img.manifestDigest}`, { headers: me.auth })).status, 202);
  t.equal((await http('GET', `${reg}/v2/myapp/web/manifests/v1`, { headers: me.auth })).status, 404, 'delete by digest removes its tags');
  t.equal((await http('DELETE', `${reg}/v2/myapp/web/manifests/${img.manifestDigest}`, { headers: me.auth })).status, 404);
});

t.test('manifest refusals change nothing', async (t) => {
  const img = await pushImage(me, 'myapp/web', 'keep');
  const tags = async () => (await http('GET', `${reg}/v2/myapp/web/tags/list`, { headers: me.auth })).json.tags;
  const before = await tags();
  const manifest = JSON.parse(img.manifest.toString());
  const oci = { ...manifest, mediaType: 'application/vnd.oci.image.manifest.v1+json' };
  // Valid JSON but for one byte inside a string that is not UTF-8 (older builds read it as U+FFFD).
  const notUtf8 = Buffer.from(JSON.stringify({ ...manifest, note: '~' }));
  notUtf8[notUtf8.lastIndexOf(0x7e)] = 0xff;
  const cases: Array<[string, Buffer | string, string, number, string, RegExp]> = [
    ['oci', JSON.stringify(oci), 'application/vnd.oci.image.manifest.v1+json', 400, 'MANIFEST_INVALID', /OCI image manifests .* are not supported; only application\/vnd\.docker\.distribution\.manifest\.v2\+json/],
    ['oci-index', JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [] }), 'application/vnd.oci.image.index.v1+json', 400, 'MANIFEST_INVALID', /OCI image indexes/],
    ['list', JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.docker.distribution.manifest.list.v2+json', manifests: [] }), 'application/vnd.docker.distribution.manifest.list.v2+json', 400, 'MANIFEST_INVALID', /Docker manifest lists/],
    ['malformed', '{"schemaVersion": 2,', 'application/vnd.docker.distribution.manifest.v2+json', 400, 'MANIFEST_INVALID', /not valid JSON/],
    ['no-layers-array', JSON.stringify({ ...manifest, layers: 'x' }), 'application/vnd.docker.distribution.manifest.v2+json', 400, 'MANIFEST_INVALID', /layers must be an array/],
    ['missing-blob', JSON.stringify({ ...manifest, layers: [{ ...manifest.layers[0], digest: sha256('absent') }] }), 'application/vnd.docker.distribution.manifest.v2+json', 400, 'MANIFEST_BLOB_UNKNOWN', /not pushed to myapp\/web/],
    ['wrong-size', JSON.stringify({ ...manifest, layers: [{ ...manifest.layers[0], size: 1 }] }), 'application/vnd.docker.distribution.manifest.v2+json', 400, 'MANIFEST_INVALID', /does not match/],
    ['not-utf8', notUtf8, 'application/vnd.docker.distribution.manifest.v2+json', 400, 'MANIFEST_INVALID', /not valid UTF-8/],
    ['too-large', Buffer.alloc(4 * 1024 * 1024 + 1, 32), 'application/vnd.docker.distribution.manifest.v2+json', 413, 'SIZE_INVALID', /4 MiB/],
  ];
  for (const [label, body, type, status, code, message] of cases) {
    const r = await putManifest(me, 'myapp/web', `bad-${label}`, body, type);
    t.equal(r.status, status, `${label} status`);
    t.equal(errCode(r), code, `${label} code`);
    t.match(errMessage(r), message, `${label} message`);
  }
  const mismatch = await putManifest(me, 'myapp/web', sha256('not this manifest'), img.manifest);
  t.equal(errCode(mismatch), 'DIGEST_INVALID');
  t.same(await tags(), before, 'tags unchanged');
});

t.test('tags list pagination and catalog', async (t) => {
  const img = await pushImage(me, 'myapp/tags', 'a');
  for (const tag of ['c', 'b', 'd']) await putManifest(me, 'myapp/tags', tag, img.manifest);
  const all = await http('GET', `${reg}/v2/myapp/tags/tags/list`, { headers: me.auth });
  t.same(all.json, { name: 'myapp/tags', tags: ['a', 'b', 'c', 'd'] });
  const p1 = await http('GET', `${reg}/v2/myapp/tags/tags/list?n=2`, { headers: me.auth });
  t.same(p1.json.tags, ['a', 'b']);
  t.equal(p1.headers.link, '</v2/myapp/tags/tags/list?n=2&last=b>; rel="next"');
  const p2 = await http('GET', `${reg}/v2/myapp/tags/tags/list?n=2&last=b`, { headers: me.auth });
  t.same(p2.json.tags, ['c', 'd']);
  t.notOk(p2.headers.link, 'no Link on the last page');
  t.equal(errCode(await http('GET', `${reg}/v2/myapp/nothing/tags/list`, { headers: me.auth })), 'NAME_UNKNOWN');
  await pushImage(them, 'otherapp/web', 'latest');
  const mine = await http('GET', `${reg}/v2/_catalog`, { headers: me.auth });
  t.ok(mine.json.repositories.includes('myapp/tags'));
  t.notOk(mine.json.repositories.some((r: string) => r.startsWith('otherapp/')), 'only readable repositories');
  const theirs = await http('GET', `${reg}/v2/_catalog?n=10`, { headers: them.auth });
  t.same(theirs.json.repositories, ['otherapp/web']);
  t.equal((await http('GET', `${reg}/v2/_catalog`)).status, 401);
});
