/**
 * The digest → repositories index of blob links (`blobRepositories`, engine/registry/links.ts)
 * is always the exact inverse of `repositoryBlobs`: after uploads, cross-repository mounts,
 * manifest pushes, blob DELETE, manifest DELETE by digest, GC (images, then blobs linked from
 * several repositories) and app deletion. GC's blob phase reads only the index for the blobs it
 * deletes, never the whole link table. Engine-level, with a ManualClock.
 */
import t from 'tap';
import { countRangeReads, engineFixture } from '../helpers/engine.js';
import { createHash, randomBytes } from 'node:crypto';
import { KEY_SEPARATOR, type Store } from '../../engine/store.js';
import { repositoriesLinking } from '../../engine/registry/links.js';
import { blobRepositories, repositoryBlobs } from '../../engine/registry/keyspaces.js';
import type { Digest } from '../../engine/digest.js';

const HOUR = 3600_000;
const V2S2 = 'application/vnd.docker.distribution.manifest.v2+json';
const sha = (b: Buffer) => ('sha256:' + createHash('sha256').update(b).digest('hex')) as Digest;

/** Every link as `repository digest`, read from each side; both must be the same set. */
async function links(store: Store): Promise<{ forward: string[]; inverse: string[] }> {
  const forward = (await store.metadata.range(repositoryBlobs)).map(({ key: k, value }) => {
    const cut = k.lastIndexOf(KEY_SEPARATOR);
    return `${k.slice(0, cut)} ${k.slice(cut + 1)} ${value}`;
  }).sort();
  const inverse = (await store.metadata.range(blobRepositories)).map(({ key: k, value }) => {
    const cut = k.indexOf(KEY_SEPARATOR);
    return `${k.slice(cut + 1)} ${k.slice(0, cut)} ${value}`;
  }).sort();
  return { forward, inverse };
}

t.test('the index follows every link change', async (t) => {
  const { store, clock, registry, gc, upload } = await engineFixture(t);

  const consistent = async (what: string) => {
    const { forward, inverse } = await links(store);
    t.same(inverse, forward, `${what}: index is the inverse of the links (${forward.length})`);
    return forward.length;
  };
  const manifest = (config: Buffer, layers: Buffer[]) => Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: V2S2,
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha(config) },
    layers: layers.map((l) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: l.length, digest: sha(l) })),
  }));

  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', n: randomBytes(8).toString('hex') }));
  const shared = randomBytes(3000);
  const own = randomBytes(3000);
  for (const b of [config, shared, own]) await upload('idx/web', b);
  await consistent('uploads');
  t.same(await repositoriesLinking(store.metadata, sha(shared)), ['idx/web']);
  await upload('idx/web', shared); // same blob again: still one link
  t.equal(await consistent('re-upload'), 3);

  const webManifest = manifest(config, [shared, own]);
  const webDigest = await registry.putManifest('idx/web', 'app-idx', 'latest', webManifest, V2S2);
  for (const d of [sha(config), sha(shared)]) await registry.mount('idx/web', 'idx/worker', d);
  await registry.mount('idx/web', 'other/web', sha(shared));
  await consistent('mounts');
  t.same(await repositoriesLinking(store.metadata, sha(shared)), ['idx/web', 'idx/worker', 'other/web'], 'three repositories link the shared layer');
  const workerDigest = await registry.putManifest('idx/worker', 'app-idx', 'latest', manifest(config, [shared]), V2S2);
  t.equal(await consistent('manifest PUTs'), 6);

  await registry.unlinkBlob('idx/worker', sha(config));
  t.same(await repositoriesLinking(store.metadata, sha(config)), ['idx/web'], 'blob DELETE unlinks one repository');
  await consistent('blob DELETE');

  await registry.deleteManifest('idx/web', webDigest);
  t.equal(await consistent('manifest DELETE by digest'), 5, 'a manifest DELETE keeps the links (GC removes them with the blob)');

  // GC: idx/worker's image goes after 24 h; then config, own and shared are at refs 0.
  clock.advance(25 * HOUR);
  let r!: Awaited<ReturnType<typeof gc.run>>;
  // Whole-table reads are the ones without a start key (a prefix read has one).
  const scans = await countRangeReads(store, repositoryBlobs, async () => { r = await gc.run(); }, (o) => o?.start === undefined);
  t.equal(scans, 0, 'GC never scans the whole link table');
  t.same(r.deletedImages.map((i) => i.digest), [workerDigest]);
  t.same(r.deletedBlobs.map((b) => b.digest).sort(), [sha(config), sha(shared), sha(own)].sort(), 'every blob at refs 0 goes');
  t.equal(await consistent('GC'), 0, 'with every link of each, in all three repositories');
  t.same(await repositoriesLinking(store.metadata, sha(shared)), []);

  // App deletion removes its repositories' links, including those without a manifest.
  const goneConfig = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', n: 'gone' }));
  const goneLayer = randomBytes(100);
  for (const b of [goneConfig, goneLayer]) await upload('gone/web', b);
  await registry.putManifest('gone/web', 'app-gone', 'v1', manifest(goneConfig, [goneLayer]), V2S2);
  await registry.mount('gone/web', 'gone/worker', sha(goneLayer));
  await registry.mount('gone/web', 'kept/web', sha(goneLayer));
  t.equal(await consistent('before app deletion'), 4);
  await registry.deleteRepositoriesOf('gone');
  t.same(await repositoriesLinking(store.metadata, sha(goneLayer)), ['kept/web'], "only the other app's link is left");
  t.same(await repositoriesLinking(store.metadata, sha(goneConfig)), []);
  t.equal(await consistent('app deletion'), 1);
});
