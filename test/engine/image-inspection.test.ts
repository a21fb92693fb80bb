/**
 * Image checks in the worker pool at manifest PUT (docs/rules.md What the service does 6, Limits): whiteouts found by
 * reading layer tars, more than 40 layers, and ignored build-file instructions are recorded on
 * the image where a release reads them; the scan of a layer is cached on its blob record.
 */
import t from 'tap';
import { images, manifests } from '../../engine/registry/keyspaces.js';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, createApp, errCode, http } from '../helpers/http.js';
import { buildImage } from '../helpers/image.js';
import { pushBlob, putManifest, type Target } from '../helpers/registry.js';
import { key, openStore } from '../../engine/store.js';
import * as blobKs from '../../engine/blobs/keyspaces.js';

t.test('warnings recorded on the image', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const server = await startInProcess({ dataDir: tmp.dir });
  await createApp(server.urls.api, server.apiKey!, 'scanapp');
  const target: Target = { registry: server.urls.registry, auth: basic('_', server.apiKey!) };
  const layers = Array.from({ length: 41 }, (_, i) => ({ files: { [`layer${i}/file`]: `content ${i}` } as Record<string, string> }));
  layers[3]!.files['etc/.wh.passwd'] = '';
  layers[7]!.files['var/cache/.wh..wh..opq'] = '';
  const img = await buildImage(join(tmp.dir, 'img'), {
    layers,
    config: { ExposedPorts: { '80/tcp': {} }, Volumes: { '/data': {} }, User: 'app', Entrypoint: ['/app'], WorkingDir: '/srv' },
  });
  for (const b of [img.config, ...img.layers.map((l) => l.bytes)]) t.equal((await pushBlob(target, 'scanapp/web', b)).status, 201);
  t.equal((await putManifest(target, 'scanapp/web', 'latest', img.manifest)).status, 201);
  const small = await buildImage(join(tmp.dir, 'small'), { layers: [{ files: { 'a': 'b' } }], config: { Cmd: ['npm', 'start'] } });
  for (const b of [small.config, ...small.layers.map((l) => l.bytes)]) await pushBlob(target, 'scanapp/worker', b);
  t.equal((await putManifest(target, 'scanapp/worker', 'latest', small.manifest)).status, 201);
  // A config whose JSON spells a NUL in Env: no record may hold it, so the manifest is refused.
  const nul = await buildImage(join(tmp.dir, 'nul'), { layers: [{ files: { 'n': 'ul' } }], config: { Env: ['A=x\u0000y'] } });
  for (const b of [nul.config, ...nul.layers.map((l) => l.bytes)]) await pushBlob(target, 'scanapp/nul', b);
  const refused = await putManifest(target, 'scanapp/nul', 'latest', nul.manifest);
  t.equal(refused.status, 400, 'a config string with NUL is refused');
  t.equal(errCode(refused), 'MANIFEST_INVALID');
  t.equal((await http('GET', `${target.registry}/v2/scanapp/nul/manifests/latest`, { headers: target.auth })).status, 404, 'nothing stored');
  await server.stop();

  const store = await openStore(tmp.dir);
  t.teardown(() => store.close());
  const image = (await store.metadata.get(manifests, img.manifestDigest))!.image;
  t.equal(image.layerCount, 41);
  t.equal(image.whiteouts, 2);
  t.same(image.entrypoint, ['/app']);
  t.equal(image.workingDir, '/srv');
  t.same(image.ignoredInstructions, ['VOLUME', 'EXPOSE']);
  t.match(image.warnings.join('\n'), /41 layers; more than 40 layers may fail to start on the shared runtime/);
  t.match(image.warnings.join('\n'), /2 whiteout file\(s\) \(etc\/\.wh\.passwd, var\/cache\/\.wh\.\.wh\.\.opq\)/);
  t.match(image.warnings.join('\n'), /VOLUME is not supported at runtime/);
  t.match(image.warnings.join('\n'), /USER app is not the user used at runtime/);
  t.same((await store.metadata.get(blobKs.blobs, img.layers[3]!.digest))!.scan, { whiteouts: 1, examples: ['etc/.wh.passwd'], readable: true }, 'scan cached on the blob');
  const plain = (await store.metadata.get(manifests, small.manifestDigest))!.image;
  t.same(plain.warnings, [], 'a plain image has no warnings');
  t.same(plain.cmd, ['npm', 'start']);
  t.same((await store.metadata.range(images, { prefix: img.configDigest })).map((x) => x.key), [key(img.configDigest, 'scanapp/web', img.manifestDigest)], 'image id index');
  t.equal((await store.metadata.get(blobKs.blobs, img.layers[0]!.digest))!.refs, 1, 'blob reference counted');
});
