/**
 * The manifest → tags index (`manifestTags`, engine/registry/tags.ts) always holds exactly one
 * `repository␟digest␟tag` → updatedAt entry per tag record and nothing else: after tag PUTs, a
 * re-tag to another manifest, a re-PUT of the same tag, tag DELETE, manifest DELETE by digest
 * (with the same manifest tagged in another repository), GC and app deletion. Removing a manifest
 * (DELETE by digest, GC) reads the index, never a range of the repository's tags. Engine-level,
 * with a ManualClock.
 */
import t from 'tap';
import { countRangeReads, engineFixture } from '../helpers/engine.js';
import { createHash, randomBytes } from 'node:crypto';
import { key, KEY_SEPARATOR, type Store } from '../../engine/store.js';
import type { GarbageCollector } from '../../engine/registry/gc.js';
import { tagsOfManifest } from '../../engine/registry/tags.js';
import { manifestTags, tags } from '../../engine/registry/keyspaces.js';
import type { Digest } from '../../engine/digest.js';

const HOUR = 3600_000;
const V2S2 = 'application/vnd.docker.distribution.manifest.v2+json';
const sha = (b: Buffer) => ('sha256:' + createHash('sha256').update(b).digest('hex')) as Digest;

/** The index as stored, and the index the tag records imply; both as sorted `key value` lines. */
async function tagIndex(store: Store): Promise<{ stored: string[]; implied: string[] }> {
  const stored = (await store.metadata.range(manifestTags)).map(({ key: k, value }) => `${k} ${value}`).sort();
  const implied = (await store.metadata.range(tags)).map(({ key: k, value }) => {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    return `${key(k.slice(0, cut), value.digest, k.slice(cut + 1))} ${value.updatedAt}`;
  }).sort();
  return { stored, implied };
}

t.test('the manifest → tags index follows every tag change', async (t) => {
  const { store, clock, registry, gc, upload } = await engineFixture(t);

  const consistent = async (what: string) => {
    const { stored, implied } = await tagIndex(store);
    t.same(stored, implied, `${what}: index is exactly what the tags imply (${implied.length})`);
    t.ok((await store.metadata.range(manifestTags)).map((e) => e.key).every((k) => k.split(KEY_SEPARATOR).length === 3 && !k.includes('\0')), `${what}: keys are repository␟digest␟tag, never NUL`);
    return implied.length;
  };
  /** Uploads a fresh config and layer into `repository`; returns manifest bytes naming them. */
  const image = async (repository: string) => {
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', n: randomBytes(8).toString('hex') }));
    const layer = randomBytes(500);
    for (const b of [config, layer]) await upload(repository, b);
    return Buffer.from(JSON.stringify({
      schemaVersion: 2, mediaType: V2S2,
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha(config) },
      layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: layer.length, digest: sha(layer) }],
    }));
  };
  /** Counts reads of ranges of the tag records while `fn` runs. */
  const tagScans = (fn: () => Promise<unknown>) => countRangeReads(store, tags, fn);

  // Tag PUTs: two tags on A, one on B, plus tags that point elsewhere in the repository.
  const a = await image('idx/web');
  const b = await image('idx/web');
  const A = await registry.putManifest('idx/web', 'app-idx', 'latest', a, V2S2);
  await registry.putManifest('idx/web', 'app-idx', 'v1', a, V2S2);
  const B = await registry.putManifest('idx/web', 'app-idx', 'v2', b, V2S2);
  for (let i = 0; i < 20; i++) await registry.putManifest('idx/web', 'app-idx', `other-${i}`, await image('idx/web'), V2S2);
  t.equal(await consistent('tag PUTs'), 23);
  t.same(await tagsOfManifest(store.metadata, 'idx/web', A), ['latest', 'v1']);
  t.same(await tagsOfManifest(store.metadata, 'idx/web', B), ['v2']);

  // Re-tag `latest` from A to B: the entry moves, A keeps only v1.
  clock.advance(1000);
  await registry.putManifest('idx/web', 'app-idx', 'latest', b, V2S2);
  t.equal(await consistent('re-tag to another manifest'), 23);
  t.same(await tagsOfManifest(store.metadata, 'idx/web', A), ['v1'], 'the old manifest loses the moved tag');
  t.same(await tagsOfManifest(store.metadata, 'idx/web', B), ['latest', 'v2'], 'the new manifest gains it');
  t.equal(await store.metadata.get(manifestTags, key('idx/web', B, 'latest')), clock.now(), "the entry's value is the tag's updatedAt");

  // Re-PUT of the same tag and digest: one entry, new time.
  clock.advance(1000);
  await registry.putManifest('idx/web', 'app-idx', 'v2', b, V2S2);
  t.equal(await consistent('same tag PUT again'), 23);
  t.equal(await store.metadata.get(manifestTags, key('idx/web', B, 'v2')), clock.now());

  // Tag DELETE: only the tag and its entry go, the manifest stays.
  await registry.deleteManifest('idx/web', 'v2');
  t.equal(await consistent('tag DELETE'), 22);
  t.same(await tagsOfManifest(store.metadata, 'idx/web', B), ['latest']);
  t.equal(await registry.resolveManifest('idx/web', B), B, 'the manifest is still there');

  // The same manifest A, tagged in a second repository of the app.
  const aw = JSON.parse(a.toString()) as { config: { digest: Digest }; layers: Array<{ digest: Digest }> };
  for (const d of [aw.config.digest, aw.layers[0]!.digest]) await registry.mount('idx/web', 'idx/worker', d);
  await registry.putManifest('idx/worker', 'app-idx', 'v1', a, V2S2);
  await registry.putManifest('idx/worker', 'app-idx', 'stable', a, V2S2);
  t.equal(await consistent('manifest tagged in a second repository'), 24);

  // Manifest DELETE by digest removes A's tags in idx/web only, through the index.
  const scansOnDelete = await tagScans(() => registry.deleteManifest('idx/web', A));
  t.equal(scansOnDelete, 0, 'DELETE by digest reads no range of the tags');
  t.equal(await consistent('manifest DELETE by digest'), 23);
  t.same(await tagsOfManifest(store.metadata, 'idx/web', A), []);
  t.same(await tagsOfManifest(store.metadata, 'idx/worker', A), ['stable', 'v1'], "the other repository's tags stay");

  // GC after 24 h: every image here is unreleased and goes, with every tag, through the index.
  const c = await image('idx/web');
  const C = await registry.putManifest('idx/web', 'app-idx', 'c1', c, V2S2);
  await registry.putManifest('idx/web', 'app-idx', 'c2', c, V2S2);
  t.equal(await consistent('before GC'), 25);
  clock.advance(25 * HOUR);
  let report: Awaited<ReturnType<GarbageCollector['run']>> | undefined;
  const scansOnGc = await tagScans(async () => { report = await gc.run(); });
  t.equal(scansOnGc, 0, 'GC reads no range of the tags');
  t.ok(report!.deletedImages.some((i) => i.digest === C), 'the image with two tags is deleted');
  t.equal(report!.deletedImages.length, 23, 'every image goes: 22 in idx/web (C included), 1 in idx/worker');
  t.equal(await consistent('GC'), 0, 'no tag and no index entry left');

  // App deletion: tags of every repository of the app, the other app's stay.
  const g = await image('gone/web');
  const G = await registry.putManifest('gone/web', 'app-gone', 'v1', g, V2S2);
  await registry.putManifest('gone/web', 'app-gone', 'latest', g, V2S2);
  await registry.putManifest('gone/worker', 'app-gone', 'v1', await image('gone/worker'), V2S2);
  await registry.putManifest('kept/web', 'app-kept', 'v1', await image('kept/web'), V2S2);
  t.equal(await consistent('before app deletion'), 4);
  t.same(await tagsOfManifest(store.metadata, 'gone/web', G), ['latest', 'v1']);
  await registry.deleteRepositoriesOf('gone');
  t.equal(await consistent('app deletion'), 1);
  t.same((await store.metadata.range(tags)).map((e) => e.key), [key('kept/web', 'v1')], "only the other app's tag is left");
});
