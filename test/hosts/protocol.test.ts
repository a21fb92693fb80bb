/**
 * Distribution-spec protocol details through the wire: GET/HEAD of a manifest by a reference
 * that is neither tag nor digest is 404 MANIFEST_UNKNOWN (the conformance suite's expectation;
 * PUT stays 400), and the OCI distribution 1.1 referrers API answers an empty image index with
 * the access rules of a pull.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { tempDir, CLI } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, createApp, errCode, http } from '../helpers/http.js';
import { sha256 } from '../helpers/image.js';
import { putManifest } from '../helpers/registry.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
const reg = server.urls.registry;
if ((await createApp(server.urls.api, key, 'proto')).status !== 201) throw new Error('cannot create the app');
const other = JSON.parse(execFileSync(process.execPath, [CLI, 'account', 'create', '--email', 'other@example.com', '--json', '--data', tmp.dir], { encoding: 'utf8' }));
const me = { headers: basic('_', key) };

t.test('GET/HEAD of an invalid manifest reference is 404 MANIFEST_UNKNOWN; PUT stays 400', async (t) => {
  for (const ref of ['.INVALID_MANIFEST_NAME', '-bad', 'a'.repeat(129)]) {
    const get = await http('GET', `${reg}/v2/proto/web/manifests/${ref}`, me);
    t.equal(get.status, 404, `GET ${ref.slice(0, 20)}`);
    t.equal(errCode(get), 'MANIFEST_UNKNOWN');
    const head = await http('HEAD', `${reg}/v2/proto/web/manifests/${ref}`, me);
    t.equal(head.status, 404, `HEAD ${ref.slice(0, 20)}`);
  }
  const put = await putManifest({ registry: reg, auth: basic('_', key) }, 'proto/web', '.INVALID_MANIFEST_NAME', '{}');
  t.equal(put.status, 400);
  t.equal(errCode(put), 'MANIFEST_INVALID');
  const unknownTag = await http('GET', `${reg}/v2/proto/web/manifests/nosuchtag`, me);
  t.equal(unknownTag.status, 404);
  t.equal(errCode(unknownTag), 'MANIFEST_UNKNOWN');
});

t.test('referrers: an empty OCI image index, with pull access rules', async (t) => {
  const subject = sha256('anything');
  const r = await http('GET', `${reg}/v2/proto/web/referrers/${subject}`, me);
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'application/vnd.oci.image.index.v1+json');
  t.same(r.json, { schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [] });
  t.notOk(r.headers['oci-filters-applied']);
  const filtered = await http('GET', `${reg}/v2/proto/web/referrers/${subject}?artifactType=application/vnd.example`, me);
  t.equal(filtered.status, 200);
  t.equal(filtered.headers['oci-filters-applied'], 'artifactType');
  const bad = await http('GET', `${reg}/v2/proto/web/referrers/sha256:xyz`, me);
  t.equal(bad.status, 400);
  t.equal(errCode(bad), 'DIGEST_INVALID');
  const anon = await http('GET', `${reg}/v2/proto/web/referrers/${subject}`);
  t.equal(anon.status, 401, 'no credentials: the pull challenge');
  t.match(anon.headers['www-authenticate'], /scope="repository:proto\/web:pull"/);
  const stranger = await http('GET', `${reg}/v2/proto/web/referrers/${subject}`, { headers: basic('_', other.api_key) });
  t.equal(stranger.status, 403, "another account's repository is refused like a pull");
  const unknownApp = await http('GET', `${reg}/v2/nosuchapp/web/referrers/${subject}`, me);
  t.equal(unknownApp.status, (await http('GET', `${reg}/v2/nosuchapp/web/manifests/latest`, me)).status, 'unknown repository: as a pull');
  const post = await http('POST', `${reg}/v2/proto/web/referrers/${subject}`, me);
  t.equal(post.status, 405);
});
