/**
 * The upload writer and the hash thread: bytes fed through `write` (copy) and `region`/`commit`
 * (zero-copy) in any mix land in the file in order, the running hash matches node:crypto, the
 * pool asks for a pause when full, and a lost hash thread reports lost instead of a wrong digest.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { openSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUFFER_BYTES, POOL_BUFFERS, UploadWriter } from '../../engine/blobs/writer.js';
import { inlineHash, type RunningHash } from '../../engine/blobs/running-hash.js';
import { HashThread } from '../../workers/hash-thread.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-writer-'));
const thread = new HashThread();
t.teardown(async () => { await thread.close(); rmSync(dir, { recursive: true, force: true }); });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Feeds `data` alternating copy and zero-copy pieces of varied sizes; waits on pauses. */
async function feed(writer: UploadWriter, data: Buffer): Promise<number> {
  let off = 0;
  let pauses = 0;
  let i = 0;
  while (off < data.length) {
    const size = Math.min(data.length - off, [1, 4096, 65536, 300_001, BUFFER_BYTES + 7][i++ % 5]!);
    let more: boolean;
    const region = i % 2 === 0 ? writer.region() : null;
    if (region) {
      const n = Math.min(size, region.length);
      data.copy(region, 0, off, off + n);
      off += n;
      more = writer.commit(n);
    } else {
      more = writer.write(data.subarray(off, off + size));
      off += size;
    }
    if (!more) {
      pauses++;
      await new Promise<void>((resolve) => writer.onDrain(resolve));
    }
  }
  return pauses;
}

for (const [name, make] of [['inline', inlineHash], ['hash thread', thread.create]] as Array<[string, () => RunningHash]>) {
  t.test(`bytes and digest, ${name}`, async (t) => {
    const data = randomBytes(9 * BUFFER_BYTES + 12345);
    const path = join(dir, `${name}.bin`);
    const hash = make();
    const writer = new UploadWriter(openSync(path, 'w'), 0, hash);
    const pauses = await feed(writer, data);
    await writer.end();
    t.equal(writer.offset, data.length);
    t.equal(sha(readFileSync(path)), sha(data), 'file holds the bytes in order');
    t.equal(await hash.digest(), sha(data), 'running hash matches');
    t.ok(pauses >= 0);
  });
}

t.test('resuming at an offset appends after the earlier bytes', async (t) => {
  const first = randomBytes(3000);
  const second = randomBytes(2 * BUFFER_BYTES);
  const path = join(dir, 'resume.bin');
  const hash = thread.create();
  let w = new UploadWriter(openSync(path, 'w'), 0, hash);
  await feed(w, first);
  await w.end();
  w = new UploadWriter(openSync(path, 'r+'), first.length, hash);
  await feed(w, second);
  await w.end();
  t.equal(sha(readFileSync(path)), sha(Buffer.concat([first, second])));
  t.equal(await hash.digest(), sha(Buffer.concat([first, second])));
});

t.test('the pool asks for a pause when every buffer is busy', async (t) => {
  const hash: RunningHash = { update: () => {}, digest: async () => null, discard: () => {} }; // never releases
  const w = new UploadWriter(openSync(join(dir, 'pause.bin'), 'w'), 0, hash);
  let accepted = 0;
  while (w.write(Buffer.alloc(BUFFER_BYTES))) accepted++;
  t.equal(accepted + 1, POOL_BUFFERS, 'false once the last pool buffer is taken');
  t.equal(w.region(), null, 'no region while every buffer is busy');
  t.ok(!w.write(Buffer.alloc(10)), 'overflow still accepted, still paused');
  t.equal(w.offset, POOL_BUFFERS * BUFFER_BYTES + 10);
});

t.test('a hash thread that stops reports lost, never a wrong digest', async (t) => {
  const own = new HashThread();
  const hash = own.create();
  const w = new UploadWriter(openSync(join(dir, 'lost.bin'), 'w'), 0, hash);
  await feed(w, randomBytes(2 * BUFFER_BYTES));
  await w.end();
  await own.close();
  t.equal(await hash.digest(), null, 'lost after the thread stopped');
  const after = own.create();
  const data = randomBytes(1000);
  await new Promise<void>((resolve) => after.update(Buffer.from(data), resolve));
  t.equal(await after.digest(), sha(data), 'new hashes after close run inline');
  const plain = thread.create();
  await new Promise<void>((resolve) => plain.update(Buffer.from(data), resolve));
  t.equal(await plain.digest(), null, 'a buffer that cannot be shared makes the hash lost');
});
