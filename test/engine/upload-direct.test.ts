/**
 * The byte path's aligned buffers and buffer reuse: page-aligned buffers (aligned-buffer.ts) are
 * accepted by `O_DIRECT` (the filesystem store's direct reads of pulls use them); sessions whose
 * requests end and start on unaligned offsets hold exactly the bytes sent and commit by the
 * running hash; a session's next writer reuses the previous writer's free buffers but never the
 * one a socket may still read into, and the budget is given back at every `end`; a suspended
 * session keeps its descriptor for its next request and closes it once idle.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants as fsc, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUFFER_BYTES, UploadWriter } from '../../engine/blobs/writer.js';
import { UploadMemory } from '../../engine/blobs/upload-memory.js';
import { directReady, sharedBuffer, DIRECT_IO_ALIGN } from '../../engine/blobs/aligned-buffer.js';
import { HashThread } from '../../workers/hash-thread.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { CLOSE_IDLE_MS } from '../../engine/blobs/fs-writer.js';
import type { Digest } from '../../engine/digest.js';
import { sessionFile } from '../helpers/engine.js';
import { waitFor } from '../helpers/daemons.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-direct-'));
const thread = new HashThread();
t.teardown(async () => { await thread.close(); rmSync(dir, { recursive: true, force: true }); });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const backend = new FsBlobBackend(dir, { newHash: thread.create });

/**
 * Feeds `data` through regions (the zero-copy path), `step` bytes at most per commit;
 * `onRegion` sees each region once its bytes are copied in, before the commit.
 */
async function feedRegions(w: UploadWriter, data: Buffer, step: number, onRegion?: (r: Buffer) => void): Promise<void> {
  let off = 0;
  while (off < data.length) {
    const r = w.region();
    if (!r) {
      await new Promise<void>((resolve) => w.onDrain(resolve));
      continue;
    }
    const n = Math.min(step, r.length, data.length - off);
    data.copy(r, 0, off, off + n);
    onRegion?.(r);
    off += n;
    if (!w.commit(n)) await new Promise<void>((resolve) => w.onDrain(resolve));
  }
}

t.test('aligned buffers: 64 KiB multiples are page-aligned and accepted by O_DIRECT', async (t) => {
  const big = sharedBuffer(BUFFER_BYTES);
  t.ok(big.buffer instanceof SharedArrayBuffer, 'shared, so the hash thread reads it without a copy');
  t.ok(directReady(big), 'a pool buffer is ready for direct I/O');
  t.ok(directReady(big.subarray(DIRECT_IO_ALIGN, 3 * DIRECT_IO_ALIGN)), 'so is an aligned part of it');
  t.notOk(directReady(big.subarray(512, 512 + DIRECT_IO_ALIGN)), 'not an unaligned start');
  t.notOk(directReady(big.subarray(0, DIRECT_IO_ALIGN + 1)), 'not an unaligned length');
  t.notOk(directReady(sharedBuffer(4096)), 'small buffers are ordinary SharedArrayBuffers');
  big.fill(7);
  let fd: number;
  try {
    fd = openSync(join(dir, 'probe'), fsc.O_RDWR | fsc.O_CREAT | fsc.O_DIRECT, 0o600);
  } catch (e) {
    t.comment(`this file system refuses O_DIRECT (${(e as NodeJS.ErrnoException).code}); the reader falls back to the page cache`);
    return;
  }
  try {
    t.equal(writeSync(fd, big, 0, big.length, 0), big.length, 'the kernel takes the whole buffer directly');
  } finally {
    closeSync(fd);
  }
  t.ok(readFileSync(join(dir, 'probe')).equals(big), 'and the file holds it');
});

t.test('requests ending and starting unaligned: every byte in order, committed by the running hash', async (t) => {
  const memory = new UploadMemory(64 * 1024 * 1024);
  const parts = [randomBytes(100_003), randomBytes(3 * BUFFER_BYTES + 5), randomBytes(2 * BUFFER_BYTES), randomBytes(1)];
  const blob = await backend.create('mixed');
  for (const [i, part] of parts.entries()) {
    const w = new UploadWriter(blob, memory);
    await feedRegions(w, part, [65_536, 1_000_000, 4096, 1][i]!);
    await w.end();
    // 30 s: the first request waits for the hash thread to start, which took over 10 s under tap
    // with other suites running on this 2-CPU machine (the file passes in about 1.5 s alone).
    await waitFor(`request ${i}: the budget given back once the hash released the last buffers`, () => memory.used === 0, { timeoutMs: 30_000, intervalMs: 5 });
  }
  const all = Buffer.concat(parts);
  t.ok(readFileSync(sessionFile(dir, 'mixed')).equals(all), 'the session file holds exactly the bytes sent');
  t.same(await blob.commit(`sha256:${sha(all)}` as Digest), { digest: `sha256:${sha(all)}`, size: all.length, created: true });
});

t.test('a session reuses its free buffers, never the one a cut-off socket may still read into', async (t) => {
  const memory = new UploadMemory(64 * 1024 * 1024);
  const blob = await backend.create('reuse');
  const first = randomBytes(3 * BUFFER_BYTES + 12_345);
  const a = new UploadWriter(blob, memory);
  const aBuffers = new Set<ArrayBufferLike>();
  await feedRegions(a, first, BUFFER_BYTES, (r) => aBuffers.add(r.buffer));
  const held = a.region()!; // the body is cut off here: the socket still holds this region
  await a.end();
  await waitFor('the budget given back once the hash released the last buffers', () => memory.used === 0, { timeoutMs: 30_000, intervalMs: 5 });
  held.fill(0xee); // stray bytes of the dead connection
  const second = randomBytes(2 * BUFFER_BYTES + 999);
  const b = new UploadWriter(blob, memory);
  let reused = 0;
  await feedRegions(b, second, Infinity, (r) => {
    if (r.buffer === held.buffer) t.fail('the region a socket may hold was handed out again');
    if (aBuffers.has(r.buffer)) reused++;
    held.fill(0xee); // the dead connection keeps writing
  });
  await b.end();
  t.ok(reused > 0, `the second writer filled buffers of the first (${reused} regions)`);
  const all = Buffer.concat([first, second]);
  t.ok(readFileSync(sessionFile(dir, 'reuse')).equals(all), 'no stray byte reached the session');
  t.same(await blob.commit(`sha256:${sha(all)}` as Digest), { digest: `sha256:${sha(all)}`, size: all.length, created: true });
});

/** Descriptors of this process open on `path` (from /proc/self/fd). */
function openOn(path: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === path) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

t.test('a suspended session keeps its descriptor for the next request, then closes it when idle', async (t) => {
  const memory = new UploadMemory(64 * 1024 * 1024);
  const blob = await backend.create('idle-close');
  const path = sessionFile(dir, 'idle-close');
  const parts = [randomBytes(2 * BUFFER_BYTES), randomBytes(BUFFER_BYTES + 7)];
  const w1 = new UploadWriter(blob, memory);
  await feedRegions(w1, parts[0]!, 1_000_000);
  await w1.end(); // suspends the session
  const held = openOn(path);
  t.ok(held >= 1, `right after the request the descriptor stays open for the next one (${held})`);
  const w2 = new UploadWriter(blob, memory);
  await feedRegions(w2, parts[1]!, 1_000_000);
  await w2.end();
  t.equal(openOn(path), held, 'the next request used the same descriptor, none was added');
  const t0 = Date.now();
  await waitFor('the idle session closes its descriptor', () => openOn(path) === 0, { timeoutMs: 10_000, intervalMs: 20 });
  t.ok(Date.now() - t0 >= CLOSE_IDLE_MS - 100, 'not before CLOSE_IDLE_MS');
  const w3 = new UploadWriter(blob, memory);
  await feedRegions(w3, Buffer.from('tail'), 4);
  await w3.end();
  const all = Buffer.concat([...parts, Buffer.from('tail')]);
  t.ok(readFileSync(path).equals(all), 'a request after the close reopens the file and appends after the earlier bytes');
  t.same(await blob.commit(`sha256:${sha(all)}` as Digest), { digest: `sha256:${sha(all)}`, size: all.length, created: true });
  t.equal(openOn(path), 0, 'the commit leaves no descriptor open');
});
