/**
 * The filesystem store's pull reads (engine/blobs/fs-reader.ts): direct reads ahead at unaligned
 * offsets and sizes, the page-cache policy (`PullHeat`), and through the real HTTP interface:
 * ranges at unaligned offsets of blobs whose sizes are not multiples of 4096, right after the
 * push (through the page cache) and after a restart (the first pull direct), and many pulls of
 * one blob at once while the policy switches from direct reads to the page cache, on both
 * listeners (h1 sends the reader's lent buffers; uWS reads through the page cache).
 */
import t from 'tap';
import { randomBytes, randomInt, createHash } from 'node:crypto';
import { promises as fsp, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CACHED_BUFFER_BYTES, DIRECT_CHUNK, DIRECT_MIN_BYTES, FsReader, PullHeat } from '../../engine/blobs/fs-reader.js';
import { recycleShared, sharedBuffer, sharedPooledBytes } from '../../engine/blobs/aligned-buffer.js';
import type { Digest } from '../../engine/digest.js';
import { tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { uwsUnavailable } from '../../server/http/uws.js';
import { basic, createApp, http } from '../helpers/http.js';
import { pushBlob, type Target } from '../helpers/registry.js';

const tmp = tempDir('slipway-fsreader-');
t.teardown(() => tmp.cleanup());

/** Lends `length` bytes from `position` to the end, concatenated. */
async function lendAll(r: FsReader, position: number, length: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let pos = position;
  while (pos < position + length) {
    const v = await r.lend(pos, position + length - pos);
    if (v.byteLength === 0) throw new Error(`nothing lent at ${pos}`);
    parts.push(Buffer.from(v)); // a copy: the lent memory is reused by the next lend
    pos += v.byteLength;
  }
  return Buffer.concat(parts);
}

async function reader(path: string, digest: string, heat: PullHeat): Promise<FsReader> {
  const h = await fsp.open(path, 'r');
  return new FsReader(digest as Digest, h, (await h.stat()).size, heat);
}

t.test('direct reads ahead: unaligned starts, sizes and ends, jumps', async (t) => {
  const size = DIRECT_MIN_BYTES + 3 * DIRECT_CHUNK + 4097; // not a multiple of 4096
  const bytes = randomBytes(size);
  const path = join(tmp.dir, 'blob');
  writeFileSync(path, bytes);
  const cases: Array<[number, number]> = [
    [0, size], [1, size - 1], [4095, size - 4095 - 1], [4097, DIRECT_MIN_BYTES + 5],
    [DIRECT_CHUNK - 1, size - DIRECT_CHUNK + 1], [size - DIRECT_MIN_BYTES - 3, DIRECT_MIN_BYTES + 3],
  ];
  for (const [start, length] of cases) {
    const r = await reader(path, `sha256:${start}`, new PullHeat()); // a fresh heat: first pull, direct
    const got = await lendAll(r, start, length);
    t.equal(r.mode, 'direct', `bytes ${start}+${length} read directly`);
    t.ok(got.equals(bytes.subarray(start, start + length)), `bytes ${start}+${length}`);
    await r.close();
  }
  // One reader asked at places that do not follow on: the read-ahead starts over each time.
  const r = await reader(path, 'sha256:jumps', new PullHeat());
  t.ok(Buffer.from(await r.lend(3, size - 3)).equals(bytes.subarray(3, DIRECT_CHUNK)), 'the first chunk ends at the aligned boundary');
  for (let i = 0; i < 12; i++) {
    const start = randomInt(0, size - 1);
    const length = Math.min(size - start, randomInt(1, 3 * DIRECT_CHUNK));
    const v = await r.lend(start, length);
    t.ok(v.byteLength > 0 && v.byteLength <= length, 'lends within the range');
    t.ok(Buffer.from(v).equals(bytes.subarray(start, start + v.byteLength)), `jump to ${start}`);
  }
  t.equal(r.mode, 'direct');
  await r.close();
  await r.close(); // idempotent
  await t.rejects(r.lend(0, 1), /closed/);
});

t.test('the policy: small pulls, a second pull, pulls at once go through the page cache', async (t) => {
  const bytes = randomBytes(DIRECT_MIN_BYTES + 1);
  const path = join(tmp.dir, 'policy');
  writeFileSync(path, bytes);
  let now = 0;
  const heat = new PullHeat(1000, () => now);
  const small = await reader(path, 'sha256:p', heat);
  t.ok((await lendAll(small, 5, DIRECT_MIN_BYTES - 5)).equals(bytes.subarray(5, DIRECT_MIN_BYTES)));
  t.equal(small.mode, 'cached', 'a pull under the threshold reads through the cache');
  await small.close();
  now = 2000; // the small pull is outside the window now
  const a = await reader(path, 'sha256:p', heat);
  const b = await reader(path, 'sha256:p', heat);
  t.ok((await a.lend(0, bytes.length)).byteLength > 0);
  t.equal(a.mode, 'direct', 'the first large pull reads directly');
  t.ok((await lendAll(b, 0, bytes.length)).equals(bytes));
  t.equal(b.mode, 'cached', 'a pull while another runs reads through the cache');
  t.ok((await lendAll(a, 0, bytes.length)).equals(bytes), 'the direct reader restarts at 0');
  await a.close();
  await b.close();
  now = 2500;
  const c = await reader(path, 'sha256:p', heat);
  await lendAll(c, 0, bytes.length);
  t.equal(c.mode, 'cached', 'pulled within the window: the page cache');
  await c.close();
  now = 10_000;
  const d = await reader(path, 'sha256:p', heat);
  await lendAll(d, 0, bytes.length);
  t.equal(d.mode, 'direct', 'not pulled for longer than the window: direct again');
  await d.close();
  heat.written('sha256:w' as Digest);
  now = 10_500;
  const w = await reader(path, 'sha256:w', heat);
  t.ok((await lendAll(w, 0, bytes.length)).equals(bytes));
  t.equal(w.mode, 'cached', 'written within the window (its push): the first pull reads through the cache');
  await w.close();
  now = 12_000;
  heat.written('sha256:x' as Digest);
  now = 13_500;
  const x = await reader(path, 'sha256:x', heat);
  await lendAll(x, 0, bytes.length);
  t.equal(x.mode, 'direct', 'written longer ago than the window: direct');
  await x.close();
});

t.test('reads ahead through the cache: 2 MiB while one or two pulls do, 1 MiB while more do', async (t) => {
  const MiB = 1024 * 1024;
  const size = 3 * DIRECT_CHUNK + 12_345;
  const bytes = randomBytes(size);
  const path = join(tmp.dir, 'ahead');
  writeFileSync(path, bytes);
  const heat = new PullHeat();
  heat.written('sha256:ahead' as Digest); // its push: every pull reads through the cache
  const open = () => reader(path, 'sha256:ahead', heat);
  // Free upload buffers in the process's pool: a pull through the cache borrows them.
  for (const b of Array.from({ length: 4 }, () => sharedBuffer(CACHED_BUFFER_BYTES))) recycleShared(b);
  const pooled = sharedPooledBytes();
  const a = await open();
  const first = await a.lend(0, size);
  t.equal(a.mode, 'cached');
  t.equal(sharedPooledBytes(), pooled - 4 * CACHED_BUFFER_BYTES, 'the pull borrowed four pooled buffers');
  t.equal(first.byteLength, 2 * MiB, 'alone: 2 MiB reads');
  t.ok(Buffer.from(first).equals(bytes.subarray(0, 2 * MiB)));
  const b = await open();
  const second = await b.lend(7, size - 7);
  t.equal(second.byteLength, 2 * MiB - 7, 'with another pull: 2 MiB reads (from the 4 KiB boundary before the start)');
  t.ok(Buffer.from(second).equals(bytes.subarray(7, 2 * MiB)));
  const c = await open();
  t.equal((await c.lend(0, size)).byteLength, MiB, 'with two others: 1 MiB reads');
  // Every reader still lends the right bytes to the end while the sizes change under it.
  const [ra, rb, rc] = await Promise.all([lendAll(a, 2 * MiB, size - 2 * MiB), lendAll(b, 2 * MiB, size - 2 * MiB), lendAll(c, 0, size)]);
  t.ok(ra.equals(bytes.subarray(2 * MiB)) && rb.equals(bytes.subarray(2 * MiB)) && rc.equals(bytes), 'bytes intact');
  await Promise.all([a.close(), b.close(), c.close()]);
  t.equal(sharedPooledBytes(), pooled + 8 * CACHED_BUFFER_BYTES, 'every borrowed or new buffer went back to the pool');
  const d = await open();
  t.equal((await d.lend(0, size)).byteLength, 2 * MiB, 'the others closed: alone again, 2 MiB');
  await d.close();
});

for (const listener of ['h1', 'uws']) t.test(`through HTTP (${listener}): unaligned ranges, odd sizes, concurrent pulls while the policy switches`, { skip: (listener === 'uws' && uwsUnavailable()) || false }, async (t) => {
  const dataDir = join(tmp.dir, `server-${listener}`);
  let server = await startInProcess({ dataDir, env: { SLIPWAY_LISTENER: listener } });
  t.teardown(() => server.stop());
  const key = server.apiKey!;
  const me: Target = { registry: server.urls.registry, auth: basic('_', key) };
  await createApp(server.urls.api, key, 'pullapp');
  const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
  const get = (digest: string, range?: string) =>
    http('GET', `${me.registry}/v2/pullapp/web/blobs/${digest}`, { headers: { ...me.auth, ...(range ? { range } : {}) } });
  const ranged: Array<[Buffer, number, number]> = [];
  for (const [size, start, end] of [[DIRECT_MIN_BYTES + 1, 1, DIRECT_MIN_BYTES], [DIRECT_MIN_BYTES + 4095, 4095, DIRECT_MIN_BYTES + 4093], [DIRECT_CHUNK * 3 + 513, DIRECT_CHUNK - 7, DIRECT_CHUNK * 3 + 512]] as const) {
    const bytes = randomBytes(size);
    t.equal((await pushBlob(me, 'pullapp/web', bytes)).status, 201);
    ranged.push([bytes, start, end]);
  }
  const rounds = Array.from({ length: 4 }, () => randomBytes(DIRECT_MIN_BYTES + randomInt(1, 3 * DIRECT_CHUNK)));
  for (const bytes of rounds) t.equal((await pushBlob(me, 'pullapp/web', bytes)).status, 201);

  // Each blob pulled with a range, right after its push (the page cache), then after a restart
  // (the new process has seen no pull nor write of it: direct), then whole (the cache).
  for (const pass of ['after the push', 'after a restart']) {
    if (pass === 'after a restart') {
      await server.stop();
      server = await startInProcess({ dataDir, env: { SLIPWAY_LISTENER: listener } });
      me.registry = server.urls.registry;
    }
    for (const [bytes, start, end] of ranged) {
      const size = bytes.length;
      const r = await get(sha(bytes), `bytes=${start}-${end}`);
      t.equal(r.status, 206);
      t.equal(r.headers['content-range'], `bytes ${start}-${end}/${size}`);
      t.ok(r.bytes.equals(bytes.subarray(start, end + 1)), `range ${start}-${end} of ${size} bytes, ${pass}`);
    }
  }
  for (const [bytes] of ranged) t.ok((await get(sha(bytes))).bytes.equals(bytes), `all ${bytes.length} bytes, pulled again`);

  // Rounds of pulls of one blob at once (pushed before the restart), whole and ranged, started
  // at random moments: the first is direct, the others go through the page cache while it runs
  // or after it.
  for (const [round, bytes] of rounds.entries()) {
    const size = bytes.length;
    const digest = sha(bytes);
    const pulls = Array.from({ length: 6 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, randomInt(0, 40)));
      if (i % 2 === 0) {
        const r = await get(digest);
        return r.status === 200 && r.bytes.equals(bytes);
      }
      const start = randomInt(0, size - 1);
      const end = Math.min(size - 1, start + randomInt(0, DIRECT_MIN_BYTES * 2));
      const r = await get(digest, `bytes=${start}-${end}`);
      return r.status === 206 && r.bytes.equals(bytes.subarray(start, end + 1));
    });
    t.same(await Promise.all(pulls), [true, true, true, true, true, true], `round ${round}: every pull got the right bytes`);
  }
});
