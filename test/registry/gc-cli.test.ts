/**
 * `slipway gc` against the data directory of a running server (LMDB is multi-process):
 * `--dry-run --json` reports what the retention rule and GC would delete and changes nothing;
 * `slipway gc` deletes exactly that, and the server stops serving it. The server runs on the
 * system clock, so the test ages records instead of advancing time: it backdates one image's
 * push to 25 h ago and every blob's commit to 2 h ago, and releases the other image by writing
 * a release record (the release API has its own tests).
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, CLI } from '../helpers/server.js';
import { startSpawned, waitFor } from '../helpers/harness.js';
import { basic, createApp, errCode, http } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { pushBlob, pushBuiltImage, type Target } from '../helpers/registry.js';
import { key, openStore } from '../../engine/store.js';
import * as platform from '../../engine/platform/keyspaces.js';
import { blobFile } from '../helpers/engine.js';
import type { Digest } from '../../engine/digest.js';
import * as blobKs from '../../engine/blobs/keyspaces.js';
import { repositoryManifests } from '../../engine/registry/keyspaces.js';

const HOUR = 3600_000;
const tmp = tempDir();
const server = await startSpawned({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const me: Target = { registry: server.urls.registry, auth: basic('_', server.apiKey!) };
await createApp(server.urls.api, server.apiKey!, 'cliapp');

async function push(tag: string) {
  const img = await buildImage(join(tmp.dir, `img-${tag}`), sampleSpec());
  return pushBuiltImage(me, 'cliapp/web', tag, img);
}
const doomed = await push('doomed');
const released = await push('released');
const stray = Buffer.from('an uploaded blob no manifest names');
if ((await pushBlob(me, 'cliapp/web', stray)).status !== 201) throw new Error('stray blob push failed');

{
  const store = await openStore(tmp.dir);
  const now = Date.now();
  const app = (await store.metadata.get(platform.apps, (await store.metadata.get(platform.appsByName, 'cliapp'))!))!;
  await store.metadata.transact(async (tx) => {
    tx.put(repositoryManifests, key('cliapp/web', doomed.manifestDigest), now - 25 * HOUR);
    for (const { key: d, value } of await tx.range(blobKs.blobs)) tx.put(blobKs.blobs, d, { ...value, createdAt: now - 2 * HOUR });
  });
  await store.metadata.transact((tx) => tx.put(platform.releases, key(app.id, '0000000001'), {
    id: 'r1', appId: app.id, version: 1, description: 'test', userId: app.ownerId, createdAt: now,
    images: { web: { configDigest: released.configDigest, manifestDigest: released.manifestDigest, repository: 'cliapp/web', command: '/bin/sh', workingDir: '/', warnings: [] } },
    restarted: ['web'], releasePhase: false, rollbackOf: null,
  }));
  await store.close();
}
const doomedBlobs = [doomed.configDigest, ...doomed.layers.map((l) => l.digest), sha256(stray)].sort();
const gc = (...args: string[]) => execFileSync(process.execPath, [CLI, 'gc', '--data', tmp.dir, ...args], { encoding: 'utf8' });
const manifestStatus = async (digest: string) => (await http('GET', `${me.registry}/v2/cliapp/web/manifests/${digest}`, { headers: me.auth })).status;

t.test('gc --dry-run --json reports and changes nothing', async (t) => {
  const report = JSON.parse(gc('--dry-run', '--json'));
  t.equal(report.dryRun, true);
  t.same(report.deletedImages.map((i: { digest: string; reason: string }) => [i.digest, i.reason]), [[doomed.manifestDigest, 'unreleased']]);
  t.same(report.deletedBlobs.map((b: { digest: string }) => b.digest).sort(), doomedBlobs, "the doomed image's own blobs and the stray upload");
  t.same(report.images, { unreleased: 1, expired: 0, kept: 1 });
  t.equal(await manifestStatus(doomed.manifestDigest), 200, 'still pullable');
  // Not over HTTP: a GET of an unreferenced blob touches it and keeps it (last test).
  t.ok(doomedBlobs.every((d) => existsSync(blobFile(tmp.dir, d as Digest))), 'files still there');
});

t.test('gc deletes them, prints what it deleted; the released image stays', async (t) => {
  const out = gc();
  t.match(out, /^Deleted 1 image\(s\) \(1 never released, 0 expired\), 5 blob\(s\) \([\d.]+ (KiB|MiB)\) and 0 orphan file\(s\) \(0 B\) in [\d.]+ ms\.$/m);
  t.match(out, `image  cliapp/web@${doomed.manifestDigest}  never released`);
  for (const d of doomedBlobs) t.match(out, `blob   ${d}`);
  const gone = await http('GET', `${me.registry}/v2/cliapp/web/manifests/doomed`, { headers: me.auth });
  t.equal(gone.status, 404);
  t.equal(errCode(gone), 'MANIFEST_UNKNOWN', 'its tag is gone too');
  t.equal(await manifestStatus(doomed.manifestDigest), 404);
  t.equal(await manifestStatus(released.manifestDigest), 200, 'released image kept');
  for (const b of [released.config, ...released.layers.map((l) => l.bytes)]) {
    const r = await http('GET', `${me.registry}/v2/cliapp/web/blobs/${sha256(b)}`, { headers: me.auth });
    t.equal(sha256(r.bytes), sha256(b), 'released blobs intact');
  }
  t.notOk(doomedBlobs.some((d) => existsSync(blobFile(tmp.dir, d as Digest))), 'files removed');
  t.equal((await http('GET', `${me.registry}/v2/cliapp/web/blobs/${sha256(stray)}`, { headers: me.auth })).status, 404);
  const again = JSON.parse(gc('--json'));
  t.same([again.images.unreleased, again.blobs.deleted, again.orphans.deleted], [0, 0, 0], 'a second run finds nothing');
});

t.test('a GET of an unreferenced blob keeps it for the grace period', async (t) => {
  const late = Buffer.from('uploaded, then fetched by a client about to reference it');
  t.equal((await pushBlob(me, 'cliapp/web', late)).status, 201);
  let store = await openStore(tmp.dir);
  const createdAt = Date.now() - 2 * HOUR;
  await store.metadata.transact(async (tx) => {
    const rec = (await tx.get(blobKs.blobs, sha256(late)))!;
    tx.put(blobKs.blobs, sha256(late), { ...rec, createdAt });
  });
  await store.close();
  t.equal((await http('GET', `${me.registry}/v2/cliapp/web/blobs/${sha256(late)}`, { headers: me.auth })).status, 200);
  store = await openStore(tmp.dir);
  await waitFor('the touch to be recorded', async () => (await store.metadata.get(blobKs.blobs, sha256(late)))?.touchedAt !== undefined, { timeoutMs: 5_000, intervalMs: 10 });
  t.ok((await store.metadata.get(blobKs.blobs, sha256(late)))!.touchedAt! > Date.now() - 60_000, 'touched');
  await store.close();
  const report = JSON.parse(gc('--json'));
  t.same([report.blobs.deleted, report.blobs.kept], [0, 1], 'kept: touched within the grace period');
  t.equal((await http('HEAD', `${me.registry}/v2/cliapp/web/blobs/${sha256(late)}`, { headers: me.auth })).status, 200);
});
