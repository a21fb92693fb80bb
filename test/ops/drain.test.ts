/**
 * Graceful drain on SIGTERM: a skopeo push of a 200 MB layer started before the signal
 * completes (skopeo opens a new connection for each PATCH and PUT: the registry and upload
 * listeners accept until the registry is quiet), readiness answers 503 and the API and auth
 * hosts refuse new connections while it runs, the server
 * exits 0, and the image pulls byte-identical after a restart. With a short deadline, an upload
 * still running is cut and resumes after the restart from its last acknowledged offset; a second
 * signal exits at once.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { tempDir } from '../helpers/server.js';
import { largestUploadFile, startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { buildImage } from '../helpers/image.js';
import { startUpload, withDigest } from '../helpers/registry.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';

/** Resolves with the error code of a new TCP connection to `url` ('' when it connected). */
function tryConnect(url: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = connect(Number(u.port), u.hostname);
    s.once('connect', () => { s.destroy(); resolve(''); });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
}

const skip = skopeoSkip();

t.test('SIGTERM while skopeo pushes a 200 MB layer: the push completes, exit 0', { skip }, async (t) => {
  const tmp = tempDir();
  let server: SpawnedSlipway = await startSpawned({ dataDir: tmp.dir });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const key = server.apiKey!;
  await createApp(server.urls.api, key, 'drained');
  const img = await buildImage(join(tmp.dir, 'img'), { layers: [{ files: { 'data.bin': randomBytes(200 * 1024 * 1024) }, level: 1 }, { files: { 'etc/motd': 'hi\n' } }] });
  const big = img.layers[0]!;
  t.ok(big.bytes.length >= 200 * 1024 * 1024, 'layer of at least 200 MB');
  const ref = `docker://${new URL(server.urls.registry).host}/drained/web:latest`;

  const push = skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, ref]);
  await waitFor('the layer upload to be under way', () => largestUploadFile(tmp.dir) > 8 * 1024 * 1024, { timeoutMs: 120_000, intervalMs: 20 });
  server.proc.kill('SIGTERM');
  await waitFor('the drain to start', () => /draining/.test(server.output()), { timeoutMs: 20_000, intervalMs: 20 });
  t.ok(largestUploadFile(tmp.dir) < big.bytes.length, 'the drain started mid-stream');
  const readyz = await http('GET', `${server.urls.admin}/readyz`);
  t.equal(readyz.status, 503, 'readiness fails while draining');
  t.match(readyz.json.checks.draining, /draining/);
  t.equal(await tryConnect(server.urls.api), 'ECONNREFUSED', 'API listener no longer accepts');
  t.equal(await tryConnect(server.urls.auth), 'ECONNREFUSED', 'auth listener no longer accepts');

  const pushed = await push;
  t.equal(pushed.code, 0, `push completed: ${pushed.stderr}`);
  t.equal(await server.exited, 0, 'server exited 0');
  t.match(server.output(), /SIGTERM received, draining/);
  t.match(server.output(), /drained, stopped/);

  server = await startSpawned({ dataDir: tmp.dir });
  const back = join(tmp.dir, 'back');
  const pull = await skopeo(['copy', '--src-creds', `_:${key}`, '--src-tls-verify=false', `docker://${new URL(server.urls.registry).host}/drained/web:latest`, `dir:${back}`]);
  t.equal(pull.code, 0, pull.stderr);
  for (const l of img.layers) {
    const got = createHash('sha256').update(readFileSync(join(back, l.digest.slice(7)))).digest('hex');
    t.equal('sha256:' + got, l.digest, `layer of ${l.bytes.length} bytes pulled byte-identical`);
  }
  t.ok(readFileSync(join(back, 'manifest.json')).equals(img.manifest), 'manifest byte-identical');
});

/** Starts a PATCH whose body sends `first` and then waits for `release` (never, here). */
function stalledPatch(location: string, first: Buffer, stalled: Promise<void>) {
  async function* body() {
    yield first;
    await stalled;
  }
  return request(location, { method: 'PATCH', body: body() as unknown as NodeJS.ReadableStream as never, headers: { 'content-type': 'application/octet-stream' } }).then(
    (r) => { r.body.resume(); return r.statusCode; },
    (e: Error) => e.message,
  );
}

t.test('an upload still running at the drain deadline is cut and resumes after restart', async (t) => {
  const tmp = tempDir();
  let server: SpawnedSlipway = await startSpawned({ dataDir: tmp.dir, env: { SLIPWAY_DRAIN_SECONDS: '0.5' } });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const auth = basic('_', server.apiKey!);
  await createApp(server.urls.api, server.apiKey!, 'cut');
  const blob = randomBytes(6 * 1024 * 1024);
  const digest = 'sha256:' + createHash('sha256').update(blob).digest('hex');
  const loc = await startUpload({ registry: server.urls.registry, auth }, 'cut/web');
  const first = await http('PATCH', loc, { body: blob.subarray(0, 1024 * 1024), headers: { 'content-type': 'application/octet-stream' } });
  t.equal(first.status, 202, 'first chunk acknowledged');
  t.equal(first.headers.range, `0-${1024 * 1024 - 1}`);

  let release!: () => void;
  const stalled = new Promise<void>((r) => { release = r; });
  const loc2 = first.headers.location!;
  const second = stalledPatch(loc2, blob.subarray(1024 * 1024, 4 * 1024 * 1024), stalled);
  // The upload writer flushes in 1 MiB buffers: wait until part of the second chunk is on disk.
  await waitFor('the second chunk to arrive', () => largestUploadFile(tmp.dir) >= 2 * 1024 * 1024, { timeoutMs: 20_000, intervalMs: 20 });
  server.proc.kill('SIGTERM');
  t.equal(await server.exited, 0, 'exit 0 after cutting');
  t.match(server.output(), /drain deadline reached/);
  t.not(await second, 202, 'the running chunk was not acknowledged');
  release();

  server = await startSpawned({ dataDir: tmp.dir });
  const resumed = loc2.replace(/^https?:\/\/[^/]+/, server.urls.upload);
  const status = await http('GET', resumed);
  t.equal(status.status, 204, `session survived: ${status.text}`);
  t.equal(status.headers.range, `0-${1024 * 1024 - 1}`, 'at its last acknowledged offset');
  const rest = await http('PATCH', resumed, { body: blob.subarray(1024 * 1024), headers: { 'content-type': 'application/octet-stream', 'content-range': `${1024 * 1024}-${blob.length - 1}` } });
  t.equal(rest.status, 202, rest.text);
  const put = await http('PUT', withDigest(rest.headers.location!.replace(/^https?:\/\/[^/]+/, server.urls.upload), digest));
  t.equal(put.status, 201, put.text);
  const got = await http('GET', `${server.urls.registry}/v2/cut/web/blobs/${digest}`, { headers: auth });
  t.ok(got.bytes.equals(blob), 'the resumed blob reads back byte-identical');
});

t.test('a second signal exits at once', async (t) => {
  const tmp = tempDir();
  const server = await startSpawned({ dataDir: tmp.dir, env: { SLIPWAY_DRAIN_SECONDS: '600' } });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  await createApp(server.urls.api, server.apiKey!, 'twice');
  const loc = await startUpload({ registry: server.urls.registry, auth: basic('_', server.apiKey!) }, 'twice/web');
  let release!: () => void;
  const stalled = new Promise<void>((r) => { release = r; });
  const patch = stalledPatch(loc, randomBytes(3 * 1024 * 1024), stalled);
  await waitFor('the chunk to arrive', () => largestUploadFile(tmp.dir) >= 1024 * 1024, { timeoutMs: 20_000, intervalMs: 20 });
  server.proc.kill('SIGTERM');
  await waitFor('the drain to start', () => /draining/.test(server.output()), { timeoutMs: 20_000, intervalMs: 20 });
  server.proc.kill('SIGTERM');
  t.equal(await server.exited, 1, 'exited on the second signal without waiting for the 600 s deadline');
  t.match(server.output(), /second SIGTERM received, exiting now/);
  release();
  await patch;
});
