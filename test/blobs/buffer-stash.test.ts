// The buffers a finished upload writer leaves for its session's next writer
// (engine/blobs/buffer-stash.ts): taken once, bounded by the global limit, expired on time.
import t from 'tap';
import { bufferStashes } from '../../engine/blobs/buffer-stash.js';
import type { BlobWriter } from '../../engine/blobs/contract.js';

const KiB = 1024;
const session = () => ({}) as unknown as BlobWriter;
const buf = (n: number) => Buffer.alloc(n);

t.test('a stash is taken once, by the same session only', async (t) => {
  const stashes = bufferStashes(64 * KiB, 60_000);
  const a = session(), b = session();
  const stash = stashes.open(a, []);
  const x = buf(16 * KiB), y = buf(16 * KiB);
  stashes.offer(stash, x);
  stashes.offer(stash, y);
  t.same(stashes.take(b), [], 'another session finds nothing');
  const taken = stashes.take(a);
  t.equal(taken.length, 2);
  t.ok(taken[0] === x && taken[1] === y, 'the same buffers, in order');
  t.same(stashes.take(a), [], 'a stash is taken once');
  t.ok(stash.closed, 'a taken stash is closed');
  stashes.offer(stash, buf(16 * KiB));
  t.equal(stash.bufs.length, 0, 'a closed stash keeps nothing offered later');
});

t.test('the limit counts open stashes and adopted buffers until they are used', async (t) => {
  const stashes = bufferStashes(32 * KiB, 60_000);
  const a = session(), b = session();
  const sa = stashes.open(a, []);
  stashes.offer(sa, buf(16 * KiB));
  stashes.offer(sa, buf(16 * KiB));
  stashes.offer(sa, buf(16 * KiB));
  t.equal(sa.bufs.length, 2, 'a buffer past the limit is not kept');
  const adopted = stashes.take(a);
  const sb = stashes.open(b, []);
  stashes.offer(sb, buf(16 * KiB));
  t.equal(sb.bufs.length, 0, 'adopted buffers still count against the limit');
  stashes.used(adopted.pop()!.length);
  stashes.offer(sb, buf(16 * KiB));
  t.equal(sb.bufs.length, 1, 'a used buffer no longer counts');
  const again = stashes.open(a, adopted);
  t.equal(again.bufs.length, 1, 'unused adopted buffers move into the next stash');
  t.equal(adopted.length, 0);
});

t.test('a stash expires after its time and its buffers stop counting', async (t) => {
  const stashes = bufferStashes(16 * KiB, 20);
  const a = session(), b = session();
  const sa = stashes.open(a, []);
  stashes.offer(sa, buf(16 * KiB));
  await new Promise<void>((resolve) => { const poll = () => (sa.closed ? resolve() : setTimeout(poll, 5)); poll(); });
  t.same(stashes.take(a), [], 'an expired stash has nothing to take');
  const sb = stashes.open(b, []);
  stashes.offer(sb, buf(16 * KiB));
  t.equal(sb.bufs.length, 1, 'the expired buffers no longer count');
  const reopened = stashes.open(b, []);
  t.ok(sb.closed, 'opening a new stash expires the old one');
  stashes.offer(reopened, buf(16 * KiB));
  t.equal(reopened.bufs.length, 1, 'the expired stash gave its bytes back to the limit');
});
