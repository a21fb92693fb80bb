/**
 * The balanced hash thread (workers/hash-thread.ts `balance`): a lone session hashes on the
 * thread; while sessions hash there, new ones hash on the calling thread, as many here as there;
 * a place is freed at the session's digest or discard; and whatever the place, the digest is
 * the sha256 of the bytes fed. Then a race: concurrent upload writers (engine/blobs/writer.ts)
 * over filesystem sessions, with random pieces, copy and zero-copy, random pauses and lanes,
 * each session's file and digest exact whichever thread hashed it, and every place given back.
 */
import t from 'tap';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HashThread } from '../../workers/hash-thread.js';
import { UploadWriter, BUFFER_BYTES } from '../../engine/blobs/writer.js';
import { BodyLanes } from '../../engine/blobs/body-lanes.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { sharedBuffer } from '../../engine/blobs/aligned-buffer.js';
import type { RunningHash } from '../../engine/blobs/running-hash.js';
import type { Digest } from '../../engine/digest.js';
import { feedWriter } from '../helpers/upload-feed.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Feeds `data` to `hash` in random pieces (shared buffers, as the upload writer's); resolves when every piece was taken. */
async function feed(hash: RunningHash, data: Buffer): Promise<void> {
  for (let at = 0; at < data.length;) {
    const n = Math.min(data.length - at, randomInt(1, 300_000));
    const piece = sharedBuffer(n);
    data.copy(piece, 0, at, at + n);
    at += n;
    await new Promise<void>((resolve) => hash.update(piece, resolve));
  }
}

t.test('places: the thread first, then here while fewer hash here; freed at digest or discard', async (t) => {
  const thread = new HashThread({ balance: true });
  t.teardown(() => thread.close());
  const hashes = [thread.create(), thread.create(), thread.create(), thread.create()];
  t.same(hashes.map((h) => h.runsHere!()), [false, true, false, true], 'thread, here, thread, here');
  t.same(thread.placed, { onThread: 2, here: 2 });
  t.same(hashes.map((h) => h.runsHere!()), [false, true, false, true], 'a place, once chosen, stays');
  const data = hashes.map(() => randomBytes(randomInt(1, 3 * BUFFER_BYTES)));
  await Promise.all(hashes.map((h, i) => feed(h, data[i]!)));
  t.same(await Promise.all(hashes.map((h) => h.digest())), data.map(sha), 'every digest is the sha256 of its bytes, on either thread');
  t.same(thread.placed, { onThread: 0, here: 0 }, 'digests free the places');

  const empty = thread.create();
  t.equal(await empty.digest(), sha(Buffer.alloc(0)), 'a session without bytes digests the empty string');
  t.same(thread.placed, { onThread: 0, here: 0 }, 'and never took a place');

  const a = thread.create();
  const b = thread.create();
  t.notOk(a.runsHere!(), 'alone: on the thread');
  await feed(b, randomBytes(1000)); // its first bytes place it
  t.same(thread.placed, { onThread: 1, here: 1 });
  a.discard();
  t.same(thread.placed, { onThread: 0, here: 1 }, 'a discard frees the place');
  const c = thread.create();
  t.notOk(c.runsHere!(), 'with one here and none on the thread, the next goes to the thread');
  b.discard();
  c.discard();
  t.same(thread.placed, { onThread: 0, here: 0 });

  await thread.close();
  t.ok(thread.create().runsHere!(), 'after close every new session hashes here');
});

t.test('race: concurrent upload writers, each session exact whichever thread hashed it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-balance-'));
  const thread = new HashThread({ balance: true });
  t.teardown(async () => { await thread.close(); rmSync(dir, { recursive: true, force: true }); });
  const lanes = new BodyLanes(2);
  const backend = new FsBlobBackend(dir, { newHash: thread.create });
  const places: boolean[] = [];
  const idle = () => (Math.random() < 0.2 ? new Promise<void>((r) => setTimeout(r, randomInt(0, 4))) : Promise.resolve());
  for (let round = 0; round < 4; round++) {
    const sessions = await Promise.all(Array.from({ length: randomInt(2, 7) }, async (_, i) => {
      const id = `r${round}-${i}`;
      return { id, blob: await backend.create(id), data: randomBytes(randomInt(1, 5 * BUFFER_BYTES)) };
    }));
    await Promise.all(sessions.map(async (s) => {
      await new Promise((r) => setTimeout(r, randomInt(0, 6)));
      // One to three requests (PATCHes) per session: the place chosen at the first stays.
      const cuts = [0, ...Array.from({ length: randomInt(0, 3) }, () => randomInt(0, s.data.length)).sort((x, y) => x - y), s.data.length];
      for (let k = 0; k + 1 < cuts.length; k++) {
        const part = s.data.subarray(cuts[k], cuts[k + 1]);
        if (part.length === 0) continue;
        const writer = new UploadWriter(s.blob, undefined, k + 2 === cuts.length, lanes);
        await feedWriter(writer, part, () => ({ size: randomInt(1, 400_000), region: Math.random() < 0.5, idle }));
        await writer.end();
        if (k === 0) places.push(s.blob.hashesHere!());
      }
      t.equal(s.blob.size, s.data.length, `${s.id}: every byte written`);
      // The commit trusts the running hash when it was fed every byte: a wrong one fails it.
      const digest = `sha256:${sha(s.data)}` as Digest;
      const committed = await s.blob.commit(digest).catch((e: Error) => e);
      t.notOk(committed instanceof Error, `${s.id} commits under its digest`);
      t.equal(sha(Buffer.concat(await (await backend.read(digest)).toArray())), sha(s.data), `${s.id}: the blob holds its bytes`);
    }));
  }
  t.same(thread.placed, { onThread: 0, here: 0 }, 'every place given back once the sessions committed');
  t.ok(places.includes(true) && places.includes(false), `sessions hashed on both threads (${places.filter(Boolean).length} here, ${places.filter((p) => !p).length} on the thread)`);
});
