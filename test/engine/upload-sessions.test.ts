/**
 * Upload session lifecycle in the engine: a new session lives in memory until its first bytes
 * are recorded (no file either), is found by id either way, is reaped when idle past its lifetime
 * (recorded or not), completes without a body, and does not survive a restart unrecorded.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { tempDir } from '../helpers/server.js';
import { ManualClock } from '../../engine/clock.js';
import { openStore } from '../../engine/store.js';
import { Uploads } from '../../engine/blobs/uploads.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import * as blobKs from '../../engine/blobs/keyspaces.js';
import { blobFile, countRangeReads, sessionFile } from '../helpers/engine.js';

const tmp = tempDir();
const store = await openStore(tmp.dir);
t.teardown(async () => { await store.close(); tmp.cleanup(); });
const clock = new ManualClock();
const blobs = new FsBlobBackend(tmp.dir);
const uploads = new Uploads(store, blobs, clock, { staleAfterMs: 60_000 });
await uploads.init();

t.test('a new session is found before anything is recorded', async (t) => {
  const rec = await uploads.create('app/web', 'acct');
  t.equal(await store.metadata.get(blobKs.uploads, rec.id), undefined, 'not in the store yet');
  t.notOk(existsSync(sessionFile(tmp.dir, rec.id)), 'no file yet: a POST does no I/O');
  t.same(uploads.get(rec.id, 'app/web'), rec);
  t.throws(() => uploads.get(rec.id, 'app/worker'), { code: 'BLOB_UPLOAD_UNKNOWN' }, 'bound to its repository');
  const writer = uploads.beginAppend(rec, 0);
  writer.write(Buffer.from('hello'));
  const updated = await uploads.finishAppend(rec, writer, true);
  t.equal((await store.metadata.get(blobKs.uploads, rec.id))?.offset, 5, 'recorded with its first bytes');
  t.ok(existsSync(sessionFile(tmp.dir, rec.id)), 'file created with its first bytes');
  t.equal(uploads.get(rec.id, 'app/web').offset, updated.offset);
});

t.test('idle sessions are reaped, recorded or not', async (t) => {
  const fresh = await uploads.create('app/web', 'acct');
  const recorded = await uploads.create('app/web', 'acct');
  const w = uploads.beginAppend(recorded, 0);
  w.write(Buffer.from('x'));
  await uploads.finishAppend(recorded, w, true);
  clock.advance(30_000);
  const young = await uploads.create('app/web', 'acct');
  clock.advance(31_000);
  const removed = await uploads.reap();
  t.ok(removed >= 2, `reaped ${removed}`);
  for (const rec of [fresh, recorded]) {
    t.throws(() => uploads.get(rec.id, 'app/web'), { code: 'BLOB_UPLOAD_UNKNOWN' });
    t.notOk(existsSync(sessionFile(tmp.dir, rec.id)), 'bytes removed');
  }
  t.ok(uploads.get(young.id, 'app/web'), 'a session idle for less than its lifetime stays');
});

t.test('an unrecorded session does not survive a restart', async (t) => {
  const rec = await uploads.create('app/web', 'acct');
  const restarted = new Uploads(store, new FsBlobBackend(tmp.dir), clock, { staleAfterMs: 60_000 });
  await restarted.init();
  t.notOk(existsSync(sessionFile(tmp.dir, rec.id)), 'no file left');
  t.throws(() => restarted.get(rec.id, 'app/web'), { code: 'BLOB_UPLOAD_UNKNOWN' });
});

t.test('a session completed without a body stores the empty blob', async (t) => {
  const rec = await uploads.create('app/web', 'acct');
  const empty = 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
  const r = await uploads.commit(rec, empty as never);
  t.same(r, { digest: empty, size: 0 });
  t.equal((await store.metadata.get(blobKs.blobs, empty))?.size, 0);
  t.ok(existsSync(blobFile(tmp.dir, empty as never)));
});

t.test('the open-session count (metrics gauge) comes from memory and follows the records', async (t) => {
  const fresh = new Uploads(store, new FsBlobBackend(tmp.dir), clock, { staleAfterMs: 60_000 });
  await fresh.init();
  const before = fresh.recordedSessions;
  t.equal(before, (await store.metadata.range(blobKs.uploads)).length, 'loaded from the store at start');
  const rec = await fresh.create('app/web', 'acct');
  t.equal(fresh.recordedSessions, before, 'a session without bytes is not counted');
  const w = fresh.beginAppend(rec, 0);
  w.write(Buffer.from('abc'));
  const updated = await fresh.finishAppend(rec, w, true);
  let n = 0;
  t.equal(await countRangeReads(store, blobKs.uploads, async () => { n = fresh.recordedSessions; }), 0, 'no range read of the uploads keyspace');
  t.equal(n, before + 1, 'counted with its first bytes');
  await fresh.cancel(updated);
  t.equal(fresh.recordedSessions, before, 'not counted once cancelled');
});
