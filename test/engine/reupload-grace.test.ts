/**
 * Uploading a blob whose record already exists at zero references (a layer of a deleted image,
 * pushed again) renews its GC grace period like a HEAD does (engine/blobs/refs.ts
 * `recordVerifiedBlobInTransaction`): the client that was just told 201 has the grace period to
 * reference it in a manifest. Without the renewal the record kept its old age and GC could take
 * the blob right after the upload (seen as MANIFEST_BLOB_UNKNOWN restarts in
 * test/cluster/gc-under-pushes.test.ts). The grace still ends: untouched afterwards, it goes.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { engineFixture } from '../helpers/engine.js';
import { blobRecord } from '../../engine/blobs/refs.js';
import { blobs } from '../../engine/blobs/keyspaces.js';

const HOUR = 3_600_000;

t.test('a re-upload of an unreferenced blob renews its grace', async (t) => {
  const { store, clock, gc, upload } = await engineFixture(t);
  const bytes = randomBytes(5_000);
  const digest = await upload('app/web', bytes);
  const created = (await blobRecord(store.metadata, digest))!;
  t.equal(created.refs, 0);
  clock.advance(2 * HOUR);
  t.equal(await upload('app/web', bytes), digest, 'uploaded again, past the grace of the first upload');
  const renewed = (await blobRecord(store.metadata, digest))!;
  t.equal(renewed.touchedAt, clock.now(), 'the re-upload touched the record');
  t.equal(renewed.createdAt, created.createdAt, 'the record is otherwise left as it was');
  await gc.run();
  t.ok(await blobRecord(store.metadata, digest), 'GC right after the re-upload keeps the blob');
  clock.advance(2 * HOUR);
  await gc.run();
  t.equal(await blobRecord(store.metadata, digest), undefined, 'untouched for longer than the grace, GC takes it');
});

t.test('a re-upload of a referenced blob writes nothing to its record', async (t) => {
  const { store, clock, upload } = await engineFixture(t);
  const bytes = randomBytes(5_000);
  const digest = await upload('app/web', bytes);
  await store.metadata.transact(async (tx) => {
    const rec = (await tx.get(blobs, digest))!;
    tx.put(blobs, digest, { ...rec, refs: 1 });
  });
  const before = (await blobRecord(store.metadata, digest))!;
  clock.advance(2 * HOUR);
  await upload('app/web', bytes);
  t.same(await blobRecord(store.metadata, digest), before, 'record unchanged');
});
