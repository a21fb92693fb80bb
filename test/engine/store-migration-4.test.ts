/**
 * A data directory at schema 3 (written here with plain lmdb-js, as that build stored it) opens
 * with this build at schema 4: the manifest → tags index (`manifest-tags`,
 * `repository␟digest␟tag` → updatedAt) is built from every tag record, the tags themselves do not
 * change, and the migrated index is the one DELETE by digest and GC remove tags through.
 */
import t from 'tap';
import { open } from 'lmdb';
import { join } from 'node:path';
import { openStore, key, KEY_SEPARATOR } from '../../engine/store.js';
import { SCHEMA_VERSION, schemaVersion } from '../../engine/migrations.js';
import * as reg from '../../engine/registry/keyspaces.js';
import { ManualClock } from '../../engine/clock.js';
import { Registry } from '../../engine/registry/registry.js';
import { GarbageCollector } from '../../engine/registry/gc.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { releaseRetention } from '../../engine/platform/retention.js';
import { tagsOfManifest } from '../../engine/registry/tags.js';
import type { Digest } from '../../engine/digest.js';
import { tempDir } from '../helpers/server.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const now = Date.UTC(2026, 0, 1);
const M1 = `sha256:${'1'.repeat(64)}` as Digest; // in app/web (tags latest, v1, pushed 2 days ago) and other/web (tag prod)
const M2 = `sha256:${'2'.repeat(64)}` as Digest; // in app/web (tag v2)
const C1 = `sha256:${'c'.repeat(63)}1` as Digest;
const C2 = `sha256:${'c'.repeat(63)}2` as Digest;
const L = `sha256:${'d'.repeat(64)}` as Digest;

function manifest(config: Digest, links: number) {
  return {
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json', bytes: new Uint8Array([123, 125]), configDigest: config,
    layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', digest: L, size: 10 }], blobs: [config, L], links, createdAt: now - 2 * DAY,
    image: { architecture: 'amd64', os: 'linux', entrypoint: null, cmd: null, workingDir: '', env: [], user: '', ignoredInstructions: [], layerCount: 1, whiteouts: 0, warnings: [] },
  };
}

t.test('schema 3 → 4', async (t) => {
  const tmp = tempDir('slipway-migrate4-');
  t.teardown(() => tmp.cleanup());
  const env = open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack' });
  const db = (name: string) => env.openDB(name, { encoding: 'msgpack' });
  await db('meta').put('schema', 3);
  for (const [repository, appId] of [['app/web', 'app-1'], ['other/web', 'app-2']]) {
    await db('repositories').put(repository, { name: repository, appId, createdAt: now - 3 * DAY });
  }
  await db('manifests').put(M1, manifest(C1, 2));
  await db('manifests').put(M2, manifest(C2, 1));
  const pairs: Array<[string, Digest, Digest, number]> = [['app/web', M1, C1, now - 2 * DAY], ['app/web', M2, C2, now - HOUR], ['other/web', M1, C1, now - HOUR]];
  for (const [repository, digest, config, at] of pairs) {
    await db('repository-manifests').put(key(repository, digest), at);
    await db('images').put(key(config, repository, digest), at);
    for (const b of [config, L]) {
      await db('repository-blobs').put(key(repository, b), at);
      await db('blob-repositories').put(key(b, repository), at);
    }
  }
  await db('blobs').put(C1, { size: 5, createdAt: now - 3 * DAY, refs: 2 });
  await db('blobs').put(C2, { size: 6, createdAt: now - 3 * DAY, refs: 1 });
  await db('blobs').put(L, { size: 10, createdAt: now - 3 * DAY, refs: 3 });
  const tags: Array<[string, string, Digest, number]> = [
    ['app/web', 'latest', M1, now - 2 * DAY], ['app/web', 'v1', M1, now - 2 * DAY + 1], ['app/web', 'v2', M2, now - HOUR], ['other/web', 'prod', M1, now - HOUR + 1],
  ];
  for (const [repository, tag, digest, updatedAt] of tags) await db('tags').put(key(repository, tag), { digest, updatedAt });
  await env.close();

  const store = await openStore(tmp.dir);
  t.equal(await schemaVersion(store.metadata), SCHEMA_VERSION, 'schema stamped');
  t.same((await store.metadata.range(reg.manifestTags)).map((e) => [e.key, e.value]), [
    [key('app/web', M1, 'latest'), now - 2 * DAY], [key('app/web', M1, 'v1'), now - 2 * DAY + 1], [key('app/web', M2, 'v2'), now - HOUR], [key('other/web', M1, 'prod'), now - HOUR + 1],
  ], 'manifest → tags index built from every tag, with its updatedAt');
  t.ok((await store.metadata.range(reg.manifestTags)).map((e) => e.key).every((k) => k.split(KEY_SEPARATOR).length === 3 && !k.includes('\0')), 'keys joined with U+001F, never NUL');
  t.same((await store.metadata.range(reg.tags)).map((e) => [e.key, e.value]), tags.map(([r, tag, digest, updatedAt]) => [key(r, tag), { digest, updatedAt }]), 'tags unchanged');
  t.same(await tagsOfManifest(store.metadata, 'app/web', M1), ['latest', 'v1']);

  const clock = new ManualClock(now);
  const blobs = new FsBlobBackend(tmp.dir);
  const registry = new Registry(store.metadata, blobs, clock, async () => { throw new Error('no inspection in this test'); });
  await registry.deleteManifest('app/web', M2);
  t.same((await store.metadata.range(reg.tags)).map((e) => e.key), [key('app/web', 'latest'), key('app/web', 'v1'), key('other/web', 'prod')], 'DELETE by digest removes the tag found through the migrated index');
  t.equal(await store.metadata.get(reg.manifestTags, key('app/web', M2, 'v2')), undefined, 'with its index entry');

  const r = await new GarbageCollector(store.metadata, blobs, clock, releaseRetention).run();
  t.same(r.deletedImages.map((i) => [i.repository, i.digest]), [['app/web', M1]], 'GC deletes the image pushed two days ago');
  t.same((await store.metadata.range(reg.tags)).map((e) => e.key), [key('other/web', 'prod')], 'with both its tags; the same manifest keeps its tag in the other repository');
  t.same((await store.metadata.range(reg.manifestTags)).map((e) => e.key), [key('other/web', M1, 'prod')]);
  await store.close();

  const again = await openStore(tmp.dir);
  t.equal(await schemaVersion(again.metadata), SCHEMA_VERSION, 'reopening a migrated store does not migrate again');
  t.same((await again.metadata.range(reg.manifestTags)).map((e) => e.key), [key('other/web', M1, 'prod')]);
  await again.close();
});
