/**
 * The registry over HTTP with SLIPWAY_BLOB_STORE=s3 on a real Ceph RADOS Gateway (in-process
 * servers, test/helpers/s3-store.ts): start-up refusals naming the setting, monolithic and
 * chunked uploads (multipart beyond one part; with the default SLIPWAY_S3_PUT_LIMIT, one PutObject
 * up to it), HEAD answered from the record alone, Range GET,
 * cross-repository mount, DELETE, a release from a pushed image, the store stopped mid-traffic
 * (503 and readiness false, then recovery), and blob GETs redirected to presigned URLs.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { startS3Store, type S3Store } from '../helpers/s3-store.js';
import { startInProcess, waitFor, type InProcessSlipway } from '../helpers/harness.js';
import { freePort } from '../helpers/daemons.js';
import { api } from '../helpers/oauth.js';
import { basic, createApp, errCode, errMessage, http } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { assertBlobServed, pushBlob, pushBuiltImage, startUpload, withDigest, type Target } from '../helpers/registry.js';
import type { Digest } from '../../engine/digest.js';

const skip = cephSkip();
const MiB = 1024 * 1024;
const CONTAINER = 'application/vnd.slipway+json; version=3.container-releases';

t.test('the registry on S3 (Ceph RGW)', { skip }, async (t) => {
  const s3: S3Store = await startS3Store();
  t.teardown(() => s3.stop());

  t.test('bad or unreachable settings stop the start, naming the setting', async (t) => {
    await t.rejects(startInProcess({ env: s3.env('x/', { SLIPWAY_S3_BUCKET: 'no-such-bucket' }) }), /SLIPWAY_S3_BUCKET: bucket "no-such-bucket" does not exist/);
    const nobody = `http://127.0.0.1:${await freePort()}`;
    await t.rejects(startInProcess({ env: s3.env('x/', { SLIPWAY_S3_ENDPOINT: nobody, SLIPWAY_S3_TIMEOUT: '2' }) }), /SLIPWAY_S3_ENDPOINT: the object store at http:\/\/127\.0\.0\.1:\d+ did not answer/);
    await t.rejects(startInProcess({ env: s3.env('x/', { SLIPWAY_S3_PART_SIZE: '1' }) }), /SLIPWAY_S3_PART_SIZE/);
    await t.rejects(startInProcess({ env: { SLIPWAY_S3_BUCKET: 'slipway' } }), /environment variable SLIPWAY_S3_BUCKET is set but blob_store \(SLIPWAY_BLOB_STORE\) is not s3/);
  });

  const server: InProcessSlipway = await startInProcess({ env: s3.env('http/', { SLIPWAY_GC_INTERVAL: '0' }) });
  t.teardown(() => server.stop());
  const key = server.operator.apiKey;
  const reg = server.urls.registry;
  const me: Target = { registry: reg, auth: basic('_', key) };
  const bytesAt = s3.backend('http/');
  t.equal((await createApp(server.api, key, 'myapp')).status, 201);
  t.equal(server.server.blobs.kind, 's3', 'the server runs on the S3 backend');

  t.test('monolithic push, HEAD, GET, Range; the object is in the bucket', async (t) => {
    const bytes = randomBytes(300_000);
    const d = sha256(bytes) as Digest;
    t.equal((await pushBlob(me, 'myapp/web', bytes)).status, 201);
    t.equal((await bytesAt.stat(d))?.size, bytes.length, 'stored under blobs/sha256/… in the bucket');
    await assertBlobServed(t, me, 'myapp/web', bytes);
  });

  t.test('chunked upload across several multipart parts, uneven chunks', async (t) => {
    const bytes = randomBytes(12 * MiB + 12345);
    const loc = await startUpload(me, 'myapp/web');
    let at = 0;
    for (const n of [3 * MiB + 7, 5 * MiB, 4 * MiB]) {
      const r = await http('PATCH', loc, { body: bytes.subarray(at, at + n), headers: { 'content-range': `${at}-${at + n - 1}`, 'content-length': String(n) } });
      t.equal(r.status, 202, r.text);
      at += n;
    }
    const done = await http('PUT', withDigest(loc, sha256(bytes)), { body: bytes.subarray(at), headers: { 'content-length': String(bytes.length - at) } });
    t.equal(done.status, 201, done.text);
    const get = await http('GET', `${reg}/v2/myapp/web/blobs/${sha256(bytes)}`, { headers: me.auth });
    t.equal(sha256(get.bytes), sha256(bytes), 'pulled byte-identical');
    t.equal(await s3.openMultipart('http/'), 0, 'no multipart upload left open');
  });

  t.test('a wrong digest stores nothing', async (t) => {
    const bytes = randomBytes(6 * MiB);
    const wrong = sha256('something else');
    const loc = await startUpload(me, 'myapp/web');
    const r = await http('PUT', withDigest(loc, wrong), { body: bytes, headers: { 'content-length': String(bytes.length) } });
    t.equal(errCode(r), 'DIGEST_INVALID');
    t.equal(await bytesAt.stat(sha256(bytes) as Digest), undefined, 'no object under the real digest');
    t.equal(await bytesAt.stat(wrong as Digest), undefined, 'nor under the claimed one');
    t.equal(await s3.openMultipart('http/'), 0, 'the multipart upload was aborted');
  });

  t.test('the default put limit: blobs up to it are one PutObject each, larger ones multipart', async (t) => {
    // SLIPWAY_S3_PUT_LIMIT '' is the default: part size × upload concurrency = 5 × 4 = 20 MiB.
    const other = await startInProcess({ env: s3.env('putlimit/', { SLIPWAY_S3_PUT_LIMIT: '', SLIPWAY_GC_INTERVAL: '0' }) });
    t.teardown(() => other.stop());
    const key2 = other.operator.apiKey;
    t.equal((await createApp(other.api, key2, 'myapp')).status, 201);
    const them: Target = { registry: other.urls.registry, auth: basic('_', key2) };
    const chunked = randomBytes(12 * MiB + 5);
    const loc = await startUpload(them, 'myapp/web');
    let at = 0;
    for (const n of [5 * MiB + 1, 6 * MiB, MiB + 4]) {
      const r = await http('PATCH', loc, { body: chunked.subarray(at, at + n), headers: { 'content-range': `${at}-${at + n - 1}`, 'content-length': String(n) } });
      t.equal(r.status, 202, r.text);
      at += n;
      t.equal(await s3.openMultipart('putlimit/'), 0, `after ${at} B: nothing sent to the store yet`);
    }
    t.equal((await http('PUT', withDigest(loc, sha256(chunked)), { headers: { 'content-length': '0' } })).status, 201);
    await assertBlobServed(t, them, 'myapp/web', chunked);
    const monolithic = randomBytes(20 * MiB);
    t.equal((await pushBlob(them, 'myapp/web', monolithic)).status, 201, 'a monolithic push of exactly the limit');
    await assertBlobServed(t, them, 'myapp/web', monolithic);
    const wrong = sha256('not these bytes');
    const refused = await http('PUT', withDigest(await startUpload(them, 'myapp/web'), wrong), { body: chunked, headers: { 'content-length': String(chunked.length) } });
    t.equal(errCode(refused), 'DIGEST_INVALID', 'a wrong digest is refused');
    t.equal(await s3.backend('putlimit/').stat(wrong as Digest), undefined, 'nothing under the claimed digest');
    const big = randomBytes(23 * MiB + 3);
    const bigAt = await startUpload(them, 'myapp/web');
    const first = await http('PATCH', bigAt, { body: big.subarray(0, 21 * MiB), headers: { 'content-range': `0-${21 * MiB - 1}`, 'content-length': String(21 * MiB) } });
    t.equal(first.status, 202, first.text);
    await waitFor('the session past the limit to be a multipart upload', async () => (await s3.openMultipart('putlimit/')) === 1);
    const rest = await http('PUT', withDigest(first.headers.location ?? bigAt, sha256(big)), { body: big.subarray(21 * MiB), headers: { 'content-length': String(big.length - 21 * MiB) } });
    t.equal(rest.status, 201, rest.text);
    await assertBlobServed(t, them, 'myapp/web', big);
    t.equal(await s3.openMultipart('putlimit/'), 0, 'no multipart upload left open');
  });

  t.test('cross-repository mount and DELETE', async (t) => {
    const bytes = randomBytes(1000);
    const d = sha256(bytes);
    await pushBlob(me, 'myapp/web', bytes);
    const m = await http('POST', `${reg}/v2/myapp/release/blobs/uploads/?mount=${d}&from=myapp/web`, { headers: me.auth });
    t.equal(m.status, 201);
    t.equal((await http('GET', `${reg}/v2/myapp/release/blobs/${d}`, { headers: me.auth })).bytes.equals(bytes), true, 'pulls from the mounted repository');
    t.equal((await http('DELETE', `${reg}/v2/myapp/release/blobs/${d}`, { headers: me.auth })).status, 202);
    t.equal((await http('HEAD', `${reg}/v2/myapp/release/blobs/${d}`, { headers: me.auth })).status, 404, 'unlinked from that repository');
    t.equal((await http('HEAD', `${reg}/v2/myapp/web/blobs/${d}`, { headers: me.auth })).status, 200, 'still linked to the other');
  });

  t.test('a release from a pushed image', async (t) => {
    const img = await buildImage(join(server.dataDir, 'img-release'), sampleSpec());
    await pushBuiltImage(me, 'myapp/web', 'v1', img);
    const r = await api(server, 'PATCH', '/apps/myapp/formation', key, { updates: [{ type: 'web', docker_image: img.configDigest }] }, { accept: CONTAINER });
    t.equal(r.status, 200, r.text);
    const releases = await api(server, 'GET', '/apps/myapp/releases', key);
    t.equal(releases.status, 200);
    t.ok(releases.json.length >= 1, 'the release is recorded');
    for (const l of img.layers) {
      const got = await http('GET', `${reg}/v2/myapp/web/blobs/${l.digest}`, { headers: me.auth });
      t.equal(sha256(got.bytes), l.digest, `layer ${l.digest.slice(7, 19)} pulls intact`);
    }
  });

  t.test('a recorded blob whose object vanished: the GET quarantines it, HEAD stops claiming it', async (t) => {
    const bytes = randomBytes(10_000);
    const d = sha256(bytes) as Digest;
    t.equal((await pushBlob(me, 'myapp/web', bytes)).status, 201);
    t.ok(await bytesAt.delete(d), 'object deleted behind the registry\'s back');
    t.equal((await http('HEAD', `${reg}/v2/myapp/web/blobs/${d}`, { headers: me.auth })).status, 200, 'HEAD answers from the record');
    const get = await http('GET', `${reg}/v2/myapp/web/blobs/${d}`, { headers: me.auth });
    t.equal(errCode(get), 'BLOB_UNKNOWN');
    t.equal((await http('HEAD', `${reg}/v2/myapp/web/blobs/${d}`, { headers: me.auth })).status, 404, 'quarantined: clients push it again');
    t.equal((await pushBlob(me, 'myapp/web', bytes)).status, 201, 'a new push heals it');
    t.ok((await http('GET', `${reg}/v2/myapp/web/blobs/${d}`, { headers: me.auth })).bytes.equals(bytes));
  });

  t.test('the store stopped mid-traffic: 503 and readiness false, then recovery', async (t) => {
    const bytes = randomBytes(200_000);
    const d = sha256(bytes);
    t.equal((await pushBlob(me, 'myapp/web', bytes)).status, 201);
    const ready = async () => (await http('GET', `${server.urls.admin}/readyz`)).status;
    t.equal(await ready(), 200);
    await s3.rgw.stopGateway();
    const head = await http('HEAD', `${reg}/v2/myapp/web/blobs/${d}`, { headers: me.auth });
    t.equal(head.status, 200, 'HEAD answers from the record: no round trip to the store');
    const t0 = Date.now();
    const get = await http('GET', `${reg}/v2/myapp/web/blobs/${d}`, { headers: me.auth });
    t.equal(get.status, 503, 'GET: 503');
    t.equal(errCode(get), 'UNAVAILABLE', 'distribution code UNAVAILABLE (docker/distribution\'s), not TOOMANYREQUESTS');
    t.match(errMessage(get), /blob store \(S3\) is unavailable/);
    t.ok(get.headers['retry-after'], 'Retry-After');
    const push = await pushBlob(me, 'myapp/web', randomBytes(100_000));
    t.equal(push.status, 503, `push: 503 (${push.text})`);
    t.ok(Date.now() - t0 < 30_000, 'answers come within the request timeout, never a hang');
    const probe = await http('GET', `${server.urls.admin}/readyz`);
    t.equal(probe.status, 503, 'not ready while the store is away');
    t.match(probe.json?.checks?.blobStore, /did not answer/);
    await s3.rgw.startGateway();
    await waitFor('readiness to come back', async () => (await ready()) === 200, { timeoutMs: 60_000 });
    t.ok((await http('GET', `${reg}/v2/myapp/web/blobs/${d}`, { headers: me.auth })).bytes.equals(bytes), 'GET works again');
    t.equal((await pushBlob(me, 'myapp/web', randomBytes(100_000))).status, 201, 'pushes work again');
  });

  t.test('blob GET redirected to a presigned URL (SLIPWAY_S3_REDIRECT=on)', async (t) => {
    const redirecting = await startInProcess({ env: s3.env('redirect/', { SLIPWAY_S3_REDIRECT: 'on', SLIPWAY_S3_REDIRECT_EXPIRY: '60' }) });
    t.teardown(() => redirecting.stop());
    const them: Target = { registry: redirecting.urls.registry, auth: basic('_', redirecting.operator.apiKey) };
    t.equal((await createApp(redirecting.api, redirecting.operator.apiKey, 'rapp')).status, 201);
    const bytes = randomBytes(7 * MiB);
    const d = sha256(bytes);
    t.equal((await pushBlob(them, 'rapp/web', bytes)).status, 201);
    const url = `${them.registry}/v2/rapp/web/blobs/${d}`;
    const head = await http('HEAD', url, { headers: them.auth });
    t.equal(head.status, 200, 'HEAD is answered, not redirected');
    t.equal(head.headers['content-length'], String(bytes.length));
    const get = await http('GET', url, { headers: them.auth });
    t.equal(get.status, 307);
    t.equal(get.headers['docker-content-digest'], d);
    const location = get.headers.location!;
    t.match(location, /\/slipway\/redirect\/blobs\/sha256\/[a-f0-9]{2}\/[a-f0-9]{64}\?.*X-Amz-Expires=60/);
    const direct = await http('GET', location);
    t.equal(sha256(direct.bytes), d, 'the presigned URL serves the blob');
    const part = await http('GET', location, { headers: { range: 'bytes=10-19' } });
    t.equal(part.status, 206);
    t.ok(part.bytes.equals(bytes.subarray(10, 20)), 'Range through the redirect');
    t.equal((await http('GET', `${them.registry}/v2/rapp/web/blobs/${sha256('absent')}`, { headers: them.auth })).status, 404, 'an unknown blob is 404, not a redirect');
  });
});
