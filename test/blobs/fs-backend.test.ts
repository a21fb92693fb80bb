/**
 * The blob contract suite against the filesystem backend, in a temp data directory per subtest;
 * and the size of the reads behind `read`'s stream.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import type { Digest } from '../../engine/digest.js';
import { blobContractSuite } from '../helpers/blob-contract-suite.js';

const dirs: string[] = [];
t.teardown(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

blobContractSuite(t, {
  partSize: 5 * 1024 * 1024,
  async fresh() {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-fsblobs-'));
    dirs.push(dir);
    return { backend: new FsBlobBackend(dir), reopen: () => new FsBlobBackend(dir) };
  },
});

/** Every chunk of `s`, and the stream's read size (highWaterMark, bytes). */
async function chunksOf(s: Readable): Promise<{ chunks: Buffer[]; readSize: number }> {
  const readSize = s.readableHighWaterMark;
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return { chunks, readSize };
}

// A file stream allocates a Buffer of its read size for every read, the one that meets the end
// of the file included, and frees it at the thread's next garbage collection. Inspection threads
// read every pushed config and layer this way: a 300-byte config read with Node's default 64 KiB
// reads left 128 KiB of dead Buffers behind.
t.test('read: a blob shorter than 64 KiB is read in one read of its size; longer ones in 64 KiB reads', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-fsblobs-'));
  dirs.push(dir);
  const backend = new FsBlobBackend(dir);
  for (const size of [1, 300, 65_536, 200_000]) {
    const bytes = randomBytes(size);
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}` as Digest;
    const w = await backend.create(`s-${size}`);
    await w.append(bytes);
    await w.commit(digest);
    const whole = await chunksOf(await backend.read(digest));
    t.equal(whole.readSize, Math.min(size, 65_536), `${size} B: reads of ${whole.readSize} B`);
    t.ok(Buffer.concat(whole.chunks).equals(bytes), `${size} B: the bytes read back`);
    t.ok(whole.chunks.every((c) => c.length <= 65_536), `${size} B: chunks ${whole.chunks.map((c) => c.length).join(', ')}`);
    if (size < 3) continue;
    const range = await chunksOf(await backend.read(digest, { offset: 1, length: size - 2 }));
    t.equal(range.readSize, Math.min(size - 2, 65_536), `${size} B, range of ${size - 2} B: reads of ${range.readSize} B`);
    t.ok(Buffer.concat(range.chunks).equals(bytes.subarray(1, size - 1)), `${size} B: the range's bytes`);
  }
});
