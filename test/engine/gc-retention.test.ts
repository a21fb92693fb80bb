/**
 * Image retention and blob GC on the engine with a ManualClock (docs/rules.md Limits 7):
 * exactly the images the rule names are deleted, blobs shared with kept images survive, the
 * grace period and touches keep unreferenced blobs, live upload sessions protect their bytes,
 * orphan files go, a dry run changes nothing, and a file replaced by an upload while GC removes
 * it is put back. Release records are written straight into the store (the release API has its
 * own tests); pushes go through the engine's Uploads and Registry.
 */
import t from 'tap';
import { images, manifests, repositoryBlobs, repositoryManifests, tags } from '../../engine/registry/keyspaces.js';
import { manifestBytes } from '../../engine/registry/records.js';
import { waitFor } from '../helpers/harness.js';
import { engineFixture } from '../helpers/engine.js';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, mkdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { key, type Store } from '../../engine/store.js';
import { GarbageCollector } from '../../engine/registry/gc.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { releaseRetention } from '../../engine/platform/retention.js';
import { subscribeEvent, type GcEvent } from '../../engine/events.js';
import type { Digest } from '../../engine/digest.js';
import type { ReleaseImage } from '../../engine/platform/records.js';
import { releases } from '../../engine/platform/keyspaces.js';
import { blobs, uploads } from '../../engine/blobs/keyspaces.js';
import type { Keyspace } from '../../engine/storage/metadata.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const sha = (b: Buffer) => ('sha256:' + createHash('sha256').update(b).digest('hex')) as Digest;

interface Image { repository: string; digest: Digest; config: Digest; blobs: Digest[] }

async function engine(t: { teardown(fn: () => unknown): void }) {
  const { tmp, store, clock, blobs, uploads, registry, gc, upload, blobPath } = await engineFixture(t);
  /** Pushes config + layers and a v2s2 manifest tagged `tag`; returns the image. */
  async function push(repository: string, layers: Buffer[], tag = 'latest'): Promise<Image> {
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', n: randomBytes(8).toString('hex') }));
    for (const b of [config, ...layers]) await upload(repository, b);
    const manifest = Buffer.from(JSON.stringify({
      schemaVersion: 2, mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha(config) },
      layers: layers.map((l) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: l.length, digest: sha(l) })),
    }));
    const digest = await registry.putManifest(repository, 'app-' + repository.split('/')[0], tag, manifest, 'application/vnd.docker.distribution.manifest.v2+json');
    return { repository, digest, config: sha(config), blobs: [sha(config), ...layers.map(sha)] };
  }
  /** Writes release `version` of the app of `images` (process type = repository's second part). */
  async function release(version: number, ...images: Image[]): Promise<void> {
    const appId = 'app-' + images[0]!.repository.split('/')[0];
    const byType: Record<string, ReleaseImage> = {};
    for (const im of images) {
      byType[im.repository.split('/')[1]!] = { configDigest: im.config, manifestDigest: im.digest, repository: im.repository, command: '/bin/sh', workingDir: '/', warnings: [] };
    }
    const record = {
      id: randomBytes(8).toString('hex'), appId, version, description: `release ${version}`, userId: 'acct', createdAt: clock.now(),
      images: byType, restarted: Object.keys(byType), releasePhase: false, rollbackOf: null,
    };
    await store.metadata.transact((tx) => tx.put(releases, key(appId, String(version).padStart(10, '0')), record));
  }
  return { tmp, store, clock, blobs, uploads, registry, gc, upload, push, release, blobPath };
}

const blobRecordOf = (store: Store, d: Digest) => store.metadata.get(blobs, d);
const exists = async (store: Store, im: Image) => (await store.metadata.get(repositoryManifests, key(im.repository, im.digest))) !== undefined;
const layer = () => randomBytes(2000 + Math.floor(Math.random() * 1000));

t.test('unreleased images go after one day; released ones stay; shared blobs survive', async (t) => {
  const e = await engine(t);
  const shared = layer();
  const a = await e.push('shop/web', [shared, layer()], 'a');
  const b = await e.push('shop/web', [shared, layer()], 'b');
  await e.release(1, b);
  e.clock.advance(23 * HOUR);
  let r = await e.gc.run();
  t.same(r.images, { unreleased: 0, expired: 0, kept: 2 }, '23 h: nothing deleted');
  t.equal(r.blobs.deleted, 0);
  e.clock.advance(2 * HOUR);
  const gone = [a.config, a.blobs[2]!];
  let bytes = 0;
  for (const d of gone) bytes += (await blobRecordOf(e.store, d))!.size;
  r = await e.gc.run();
  t.same(r.deletedImages.map((i) => [i.repository, i.digest, i.reason]), [['shop/web', a.digest, 'unreleased']], '25 h: exactly the unreleased image');
  t.notOk(await exists(e.store, a));
  t.ok(await exists(e.store, b));
  t.equal((await e.store.metadata.get(tags, key('shop/web', 'a'))), undefined, 'its tag is gone');
  t.equal((await e.store.metadata.get(manifests, a.digest)), undefined, 'its manifest record is gone');
  t.same((await e.store.metadata.range(images, { prefix: a.config })).map((x) => x.key), [], 'image-id index entry gone');
  t.same(r.deletedBlobs.map((x) => x.digest).sort(), [...gone].sort(), 'its own blobs deleted, the shared layer kept');
  t.equal(r.blobs.bytes, bytes, 'bytes freed');
  for (const d of gone) {
    t.equal(await blobRecordOf(e.store, d), undefined);
    t.notOk(existsSync(e.blobPath(d)), 'file removed');
    t.equal((await e.store.metadata.get(repositoryBlobs, key('shop/web', d))), undefined, 'link removed');
  }
  t.equal((await blobRecordOf(e.store, sha(shared)))!.refs, 1, 'shared layer still referenced by the released image');
  t.equal(sha(readFileSync(e.blobPath(sha(shared)))), sha(shared), 'shared bytes intact');
  t.equal((await e.gc.run()).blobs.deleted + (await e.gc.run()).images.unreleased, 0, 'a second run finds nothing');
});

t.test('the 21st-newest release: its image goes after 30 days, a younger one stays; the 20 newest stay at any age', async (t) => {
  const e = await engine(t);
  const old: Image[] = [];
  for (let v = 1; v <= 21; v++) {
    old.push(await e.push('old/web', [layer()], `v${v}`));
    await e.release(v, old[v - 1]!);
  }
  const shared = await e.push('both/web', [layer()]);
  await e.release(1, shared);
  for (let v = 2; v <= 21; v++) await e.release(v, v === 15 ? shared : await e.push('both/web', [layer()], `v${v}`));
  e.clock.advance(2 * DAY);
  const young = await e.push('young/web', [layer()]);
  await e.release(1, young);
  for (let v = 2; v <= 21; v++) await e.release(v, await e.push('young/web', [layer()], `v${v}`));

  e.clock.advance(27 * DAY);
  t.same((await e.gc.run()).deletedImages, [], '29 days: nothing goes');
  e.clock.advance(2 * DAY);
  let r = await e.gc.run();
  t.same(r.deletedImages.map((i) => [i.repository, i.digest, i.reason]), [['old/web', old[0]!.digest, 'expired']], '31 days: only the image of the 21st-newest release');
  t.ok((await Promise.all(old.slice(1).map((im) => exists(e.store, im)))).every(Boolean), 'images of the 20 newest releases kept at 31 days');
  t.ok(await exists(e.store, shared), 'an image of an old release that is also in a recent one is kept');
  t.ok(await exists(e.store, young), 'the 21st-newest release of another app keeps its 29-day-old image');
  t.equal(r.blobs.deleted, 2, 'config and layer of the deleted image');
  e.clock.advance(2 * DAY);
  r = await e.gc.run();
  t.same(r.deletedImages.map((i) => i.digest), [young.digest], 'it goes once 30 days old');
});

t.test('an image is a (repository, manifest) pair', async (t) => {
  const e = await engine(t);
  const web = await e.push('pair/web', [layer()]);
  const bytes = manifestBytes((await e.store.metadata.get(manifests, web.digest))!);
  for (const d of web.blobs) await e.registry.mount('pair/web', 'pair/worker', d);
  await e.registry.putManifest('pair/worker', 'app-pair', 'latest', bytes, 'application/vnd.docker.distribution.manifest.v2+json');
  const worker: Image = { ...web, repository: 'pair/worker' };
  await e.release(1, web);
  e.clock.advance(25 * HOUR);
  const r = await e.gc.run();
  t.same(r.deletedImages.map((i) => i.repository), ['pair/worker'], 'the unreleased pair goes');
  t.ok(await exists(e.store, web));
  t.notOk(await exists(e.store, worker));
  t.equal((await e.store.metadata.get(manifests, web.digest))!.links, 1, 'manifest record kept for the other repository');
  t.same(await Promise.all(web.blobs.map(async (d) => (await blobRecordOf(e.store, d))!.refs)), [1, 1], 'refs dropped by one');
  t.equal(r.blobs.deleted, 0);
});

t.test('dry run reports exactly what a run deletes and changes nothing', async (t) => {
  const e = await engine(t);
  const kept = await e.push('dry/web', [layer()]);
  await e.release(1, kept);
  await e.push('dry/web', [layer(), layer()], 'doomed');
  await e.upload('dry/web', layer()); // never referenced
  e.clock.advance(2 * DAY);
  const before = await snapshot(e.store);
  const dry = await e.gc.run({ dryRun: true });
  t.same(await snapshot(e.store), before, 'store unchanged');
  t.ok(dry.deletedBlobs.every((b) => existsSync(e.blobPath(b.digest as Digest))), 'files unchanged');
  const real = await e.gc.run();
  t.same(dry.deletedImages, real.deletedImages);
  t.same(dry.deletedBlobs.map((b) => b.digest).sort(), real.deletedBlobs.map((b) => b.digest).sort());
  t.equal(dry.blobs.bytes, real.blobs.bytes);
  t.equal(real.blobs.deleted, 4, 'config + 2 layers + the unreferenced upload');
  t.ok(dry.dryRun);
});

/**
 * Every record GC may change, read through the metadata contract. A manifest's bytes are compared
 * as hex: lmdb-js decodes embedded binary into a copy of the class of the buffer it read into
 * (Buffer or plain Uint8Array, depending on its read path), so equal bytes may differ in class.
 */
async function snapshot(store: Store) {
  const spaces: Array<Keyspace<unknown>> = [repositoryManifests, tags, manifests, images, blobs, repositoryBlobs];
  const plain = (v: unknown) => (v && typeof v === 'object' && (v as { bytes?: unknown }).bytes instanceof Uint8Array
    ? { ...v, bytes: Buffer.from((v as { bytes: Uint8Array }).bytes).toString('hex') } : v);
  return Promise.all(spaces.map(async (ks) => (await store.metadata.range(ks)).map((x) => [x.key, plain(x.value)])));
}

t.test('grace period, touches and upload sessions keep unreferenced blobs', async (t) => {
  const e = await engine(t);
  const lone = await e.upload('grace/web', layer());
  e.clock.advance(59 * 60_000);
  t.equal((await e.gc.run()).blobs.deleted, 0, 'committed 59 min ago: kept');
  await e.registry.statBlob('grace/web', lone); // a client HEADs it: it will reference it soon
  await waitFor('the touch to be recorded', async () => (await blobRecordOf(e.store, lone))!.touchedAt, { timeoutMs: 5_000, intervalMs: 5 });
  t.equal((await blobRecordOf(e.store, lone))!.touchedAt, e.clock.now(), 'touched');
  e.clock.advance(2 * 60_000);
  let r = await e.gc.run();
  t.equal(r.blobs.deleted, 0, '61 min after commit but touched 2 min ago: kept');
  t.equal(r.blobs.kept, 1);
  e.clock.advance(HOUR);
  t.equal((await e.gc.run()).blobs.deleted, 1, 'an hour after the touch: deleted');

  const referenced = await e.push('grace/web', [layer()]);
  await e.registry.statBlob('grace/web', referenced.blobs[1]!);
  await e.store.metadata.transact((tx) => tx.remove(blobs, 'flush')); // a write: commits after any queued one
  t.equal((await blobRecordOf(e.store, referenced.blobs[1]!))!.touchedAt, undefined, 'no write for a referenced blob');

  // A blob at refs 0 whose size is the offset of a live session may be mid-commit: kept.
  const bytes = layer();
  const pending = await e.upload('grace/web', bytes);
  let session = await e.uploads.create('grace/web', 'acct');
  const w = e.uploads.beginAppend(session, undefined);
  w.write(bytes);
  session = await e.uploads.finishAppend(session, w, true);
  e.clock.advance(2 * HOUR);
  r = await e.gc.run();
  t.ok(await blobRecordOf(e.store, pending), 'kept while a session of its size is open');
  await e.uploads.cancel(session);
  r = await e.gc.run();
  t.same(r.deletedBlobs.map((b) => b.digest), [pending], 'deleted once the session is gone');
});

t.test('orphan files: old ones go, fresh ones and those of a live session stay', async (t) => {
  const e = await engine(t);
  const put = (bytes: Buffer) => {
    const d = sha(bytes);
    mkdirSync(join(e.blobPath(d), '..'), { recursive: true });
    writeFileSync(e.blobPath(d), bytes);
    return d;
  };
  const old = put(layer());
  const guarded = layer();
  const guardedDigest = put(guarded);
  let session = await e.uploads.create('orphan/web', 'acct');
  const w = e.uploads.beginAppend(session, undefined);
  w.write(Buffer.alloc(guarded.length));
  session = await e.uploads.finishAppend(session, w, true);
  e.clock.advance(2 * HOUR);
  const fresh = put(layer());
  utimesSync(e.blobPath(fresh), e.clock.now() / 1000, e.clock.now() / 1000);
  const r = await e.gc.run();
  t.same(r.deletedOrphans.map((o) => o.digest), [old]);
  t.notOk(existsSync(e.blobPath(old)));
  t.ok(existsSync(e.blobPath(fresh)), 'younger than the grace period: kept');
  t.ok(existsSync(e.blobPath(guardedDigest)), 'size of a live session: kept');
});

t.test('dedupe is by record: bytes without a record are replaced by the upload', async (t) => {
  const e = await engine(t);
  const bytes = layer();
  const d = sha(bytes);
  mkdirSync(join(e.blobPath(d), '..'), { recursive: true });
  writeFileSync(e.blobPath(d), bytes);
  const ino = statSync(e.blobPath(d)).ino;
  await e.upload('dedupe/web', bytes);
  t.not(statSync(e.blobPath(d)).ino, ino, 'own file renamed into place');
  const again = statSync(e.blobPath(d)).ino;
  await e.upload('dedupe/worker', bytes);
  t.equal(statSync(e.blobPath(d)).ino, again, 'record exists: existing bytes reused');
});

t.test('a file replaced by an upload while GC removes it is put back', async (t) => {
  const e = await engine(t);
  const bytes = layer();
  const d = await e.upload('race/web', bytes);
  e.clock.advance(2 * HOUR);
  // Hook: the moment GC deletes the bytes (after its transaction deleted the record), an upload
  // finishes: its session reaches the blob's size and, seeing no record (reuse: false, as
  // Uploads answers), the backend's commit puts its own copy in place; its record comes later.
  const blobs = new FsBlobBackend(e.tmp.dir);
  const del = blobs.delete.bind(blobs);
  blobs.delete = async (digest: Digest, ifVersion?: string) => {
    if (digest === d) {
      const now = e.clock.now();
      const session = { id: 'f'.repeat(32), repository: 'race/web', accountId: 'acct', offset: bytes.length, createdAt: now, updatedAt: now };
      await e.store.metadata.transact((tx) => tx.put(uploads, session.id, session));
      const w = await blobs.create(session.id);
      await w.append(bytes);
      t.equal((await w.commit(digest, { reuse: () => false })).created, true, 'the upload replaced the bytes');
    }
    return del(digest, ifVersion);
  };
  const gc = new GarbageCollector(e.store.metadata, blobs, e.clock, releaseRetention);
  const r = await gc.run();
  t.equal(r.blobs.deleted, 1, 'the record was deleted');
  t.equal(r.blobs.bytes, 0, 'but no bytes were freed');
  t.ok(existsSync(e.blobPath(d)), "the upload's copy is back in place");
  t.equal(sha(readFileSync(e.blobPath(d))), d);
  t.equal(r.orphans.deleted, 0, 'not taken for an orphan while its session is open');
});

t.test('a run publishes its summary on slipway:gc', async (t) => {
  const e = await engine(t);
  const seen: GcEvent[] = [];
  const off = subscribeEvent('gc', (m) => seen.push(m));
  t.teardown(off);
  await e.upload('ev/web', layer());
  e.clock.advance(2 * HOUR);
  await e.gc.run();
  t.equal(seen.length, 1);
  t.match(seen[0], { dryRun: false, blobs: { deleted: 1 }, images: { unreleased: 0 }, orphans: { deleted: 0 } });
  t.type(seen[0]!.durationMs, 'number');
});
