/**
 * `slipway backup` while 20 pushes run, then `slipway restore` into a new directory: every
 * manifest acknowledged before the backup began pulls byte-identical (manifest and blobs) from
 * a server started on the restored directory, which also keeps the operator's API key.
 */
import t from 'tap';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { runCli as cli, tempDir } from '../helpers/server.js';
import { startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { buildImage, type BuiltImage } from '../helpers/image.js';
import { pushBuiltImage, type Target } from '../helpers/registry.js';

const smallImage = (dir: string) => buildImage(dir, { layers: [{ files: { 'data.bin': randomBytes(300_000) } }, { files: { 'etc/id': randomBytes(8).toString('hex') } }] });

t.test('online backup during 20 pushes, restore, pull byte-identical', async (t) => {
  const tmp = tempDir();
  const data = join(tmp.dir, 'data');
  let server: SpawnedSlipway = await startSpawned({ dataDir: data });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const key = server.apiKey!;
  await createApp(server.urls.api, key, 'saved');
  const target: Target = { registry: server.urls.registry, auth: basic('_', key) };

  const acknowledged: Array<{ repo: string; img: BuiltImage }> = [];
  for (let i = 0; i < 4; i++) {
    const img = await pushBuiltImage(target, 'saved/base', `v${i}`, await smallImage(join(tmp.dir, `base${i}`)));
    acknowledged.push({ repo: 'saved/base', img });
  }
  const images = await Promise.all(Array.from({ length: 20 }, (_, i) => smallImage(join(tmp.dir, `img${i}`))));
  let backupStarted = false;
  const done: Array<{ repo: string; img: BuiltImage; beforeBackup: boolean }> = [];
  const pushes = images.map((img, i) => pushBuiltImage(target, `saved/p${i % 5}`, `t${i}`, img).then(() => {
    done.push({ repo: `saved/p${i % 5}`, img, beforeBackup: !backupStarted });
  }));
  await waitFor('three pushes done before the backup', () => done.length >= 3, { intervalMs: 10 });
  backupStarted = true;
  const backupDir = join(tmp.dir, 'backup');
  const b = await cli(['backup', '--data', data, '--to', backupDir, '--json']);
  await Promise.all(pushes);
  t.equal(b.code, 0, b.stderr + b.stdout);
  const report = JSON.parse(b.stdout);
  t.ok(report.blobs >= acknowledged.length * 3, `backup holds ${report.blobs} blobs`);
  t.equal(report.copied, 0, 'blobs hard-linked on one file system');
  t.ok(done.some((d) => !d.beforeBackup), 'pushes were still running when the backup began');
  acknowledged.push(...done.filter((d) => d.beforeBackup));

  const again = await cli(['backup', '--data', data, '--to', backupDir]);
  t.not(again.code, 0, 'backup refuses a non-empty directory');
  t.match(again.stderr, /not empty/);

  await server.stop();
  const restored = join(tmp.dir, 'restored');
  const r = await cli(['restore', '--from', backupDir, '--data', restored]);
  t.equal(r.code, 0, r.stderr + r.stdout);
  server = await startSpawned({ dataDir: restored });
  const auth = basic('_', key);
  t.equal((await http('GET', `${server.urls.registry}/v2/`, { headers: auth })).status, 200, 'the operator API key still works');
  for (const { repo, img } of acknowledged) {
    const m = await http('GET', `${server.urls.registry}/v2/${repo}/manifests/${img.manifestDigest}`, { headers: { ...auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    t.ok(m.status === 200 && m.bytes.equals(img.manifest), `${repo}@${img.manifestDigest.slice(7, 19)} manifest byte-identical`);
    for (const [digest, bytes] of [[img.configDigest, img.config], ...img.layers.map((l) => [l.digest, l.bytes])] as Array<[string, Buffer]>) {
      const blob = await http('GET', `${server.urls.registry}/v2/${repo}/blobs/${digest}`, { headers: auth });
      if (!(blob.status === 200 && blob.bytes.equals(bytes))) t.fail(`${repo} blob ${digest} differs (${blob.status})`);
    }
  }
  t.pass(`${acknowledged.length} acknowledged images checked`);
});
