/**
 * The registry's hot reads (admission, manifest GET/HEAD, blob HEAD/GET) are written once over
 * `MaybePromise` (engine/maybe-sync.ts): synchronous when the metadata store has the contract's
 * `getNow` fast path (LMDB), through promises when it has not (a networked store). This runs the
 * same requests through the real HTTP interface both ways, the second time with the running
 * server's LMDB store answering only through `get` (the path a PostgreSQL store takes), and
 * requires identical answers: successes, every refusal with its code and challenge, and errors.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, bearer, createApp, http } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage, type Target } from '../helpers/registry.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
const reg = server.urls.registry;
const me: Target = { registry: reg, auth: basic('_', key) };
await createApp(server.urls.api, key, 'readapp');
const img = await pushBuiltImage(me, 'readapp/web', 'v1', await buildImage(join(tmp.dir, `img-${randomBytes(4).toString('hex')}`), sampleSpec()));
const token = (await http('GET', `${reg}/token?service=x&scope=repository:readapp/web:pull`, { headers: basic('_', key) })).json.token as string;

const MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
const layer = img.layers[0]!.digest;
const requests: Array<[string, string, Record<string, string>]> = [
  ['GET', '/v2/readapp/web/manifests/v1', { ...basic('_', key), accept: MANIFEST }],
  ['HEAD', '/v2/readapp/web/manifests/v1', { ...basic('_', key), accept: MANIFEST }],
  ['GET', `/v2/readapp/web/manifests/${img.manifestDigest}`, { ...bearer(token), accept: MANIFEST }],
  ['GET', '/v2/readapp/web/manifests/v1', { ...basic('_', key), 'if-none-match': `"${img.manifestDigest}"` }],
  ['HEAD', `/v2/readapp/web/blobs/${layer}`, bearer(key)],
  ['GET', `/v2/readapp/web/blobs/${layer}`, { ...basic(server.email!, key), range: 'bytes=0-9' }],
  ['HEAD', `/v2/readapp/web/blobs/sha256:${'0'.repeat(64)}`, basic('_', key)],
  ['GET', `/v2/readapp/web/blobs/sha256:${'0'.repeat(64)}`, basic('_', key)],
  ['GET', '/v2/readapp/web/manifests/nope', basic('_', key)],
  ['GET', '/v2/readapp/web/manifests/-bad-', basic('_', key)],
  ['GET', '/v2/readapp/worker/manifests/v1', basic('_', key)],
  ['GET', '/v2/noapp/web/manifests/v1', basic('_', key)],
  ['HEAD', `/v2/noapp/web/blobs/${layer}`, basic('_', key)],
  ['GET', '/v2/readapp/web/manifests/v1', basic('_', 'wrong')],
  ['GET', '/v2/readapp/web/manifests/v1', basic('someone@example.com', key)],
  ['GET', '/v2/readapp/web/manifests/v1', bearer('not.a.token')],
  ['GET', '/v2/readapp/web/manifests/v1', {}],
  ['PUT', '/v2/readapp/web/manifests/v1', bearer(token)],
  ['GET', '/v2/', basic('_', key)],
  ['GET', '/v2/readapp/web/tags/list', bearer(token)],
];

/** Every request's status, protocol headers and body. */
async function answers() {
  const out = [];
  for (const [method, path, headers] of requests) {
    const r = await http(method, reg + path, { headers });
    const h = r.headers as Record<string, string | undefined>;
    out.push({
      request: `${method} ${path}`, status: r.status, body: r.text,
      headers: ['content-type', 'content-length', 'docker-content-digest', 'etag', 'www-authenticate', 'content-range'].map((n) => [n, h[n]]),
    });
  }
  return out;
}

t.test('the same answers with and without the synchronous fast path', async (t) => {
  const metadata = server.server.store.metadata;
  t.equal(typeof metadata.getNow, 'function', 'the embedded store has the fast path');
  const fast = await answers();
  t.same(fast.slice(0, 6).map((a) => a.status), [200, 200, 200, 304, 200, 206], 'the successes succeed');
  t.same(fast.slice(6).map((a) => a.status), [404, 404, 404, 404, 404, 403, 404, 401, 401, 401, 401, 401, 200, 200], 'the refusals refuse');
  // The same store without its fast path: every read goes through `get` and its Promise.
  Object.defineProperty(metadata, 'getNow', { value: undefined, configurable: true });
  try {
    const slow = await answers();
    for (let i = 0; i < fast.length; i++) t.same(slow[i], fast[i], fast[i]!.request);
  } finally {
    delete (metadata as { getNow?: unknown }).getNow;
  }
  t.equal(typeof metadata.getNow, 'function', 'restored');
});
