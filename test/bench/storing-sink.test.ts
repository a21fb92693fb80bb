/**
 * The least storing server (bench/servers/storing-sink.ts), whose figure bounds the concurrent
 * push in `npm run bench`: a figure is only a limit if the sink really stores what it answers
 * for. Through its HTTP interface with the bench's own push client, in every mode, with fewer
 * lanes than pushes in flight: blobs of random sizes (empty buffers aside; within a buffer, at
 * a buffer's edge, across several), sent whole or in pieces with random pauses, at random
 * moments, are each answered 201 with their digest only once their file holds exactly their
 * bytes; a wrong digest is answered 400 and leaves no file; no upload file is left behind.
 */
import t from 'tap';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { RegistryClient } from '../../bench/client.js';
import { stopChild } from '../../bench/cleanup.js';
import { spawnTrivial } from '../../bench/servers/spawn-trivial.js';
import { pushPostPut } from '../../bench/workloads/upload.js';
import { STORING_MODES } from '../../bench/storing-limit.js';

const SINK = fileURLToPath(new URL('../../bench/servers/storing-sink.js', import.meta.url));
const MiB = 1024 * 1024;
const BUFFER = 2 * MiB;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sizes at and around the sink's 2 MiB buffers, and random ones up to 9 MiB. */
function sizes(count: number): number[] {
  const edges = [1, 4095, BUFFER - 1, BUFFER, BUFFER + 1, 4 * BUFFER, 4 * BUFFER + 7];
  return [...edges, ...Array.from({ length: count - edges.length }, () => randomInt(1, 9 * MiB))];
}

/** A body that arrives in random pieces with random pauses (or, half the time, whole). */
function body(bytes: Buffer): Buffer | Readable {
  if (Math.random() < 0.5) return bytes;
  return Readable.from((async function* () {
    for (let at = 0; at < bytes.length;) {
      const n = Math.min(bytes.length - at, randomInt(1, 3 * MiB));
      yield bytes.subarray(at, at + n);
      at += n;
      if (Math.random() < 0.3) await pause(randomInt(0, 15));
    }
  })());
}

for (const mode of STORING_MODES) {
  t.test(`mode ${mode}: every blob stored as answered, a wrong digest refused`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'storing-sink-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const { child, port } = await spawnTrivial(SINK, 'storing sink', [dir, mode, '2']);
    t.teardown(() => stopChild(child));
    const client = new RegistryClient(`http://127.0.0.1:${port}`, undefined, 6);
    t.teardown(() => client.close());
    const blobs = sizes(24).map((size) => randomBytes(size));
    let next = 0;
    await Promise.all(Array.from({ length: 6 }, async () => {
      while (next < blobs.length) {
        const bytes = blobs[next++]!;
        await pause(randomInt(0, 10));
        const digest = `sha256:${sha256(bytes)}`;
        // pushPostPut checks the 201 and its Docker-Content-Digest.
        await pushPostPut(client, 'sink/web', { size: bytes.length, digest, bytes: body(bytes) as Buffer }, 30_000);
      }
    }));
    const wrong = randomBytes(3 * MiB + 5);
    const wrongDigest = `sha256:${sha256(randomBytes(8))}`;
    const start = await client.startUpload('sink/web');
    const refused = await client.call('PUT', client.withDigest(start, wrongDigest), { headers: { 'content-type': 'application/octet-stream', 'content-length': String(wrong.length) }, body: wrong, timeoutMs: 30_000 });
    t.equal(refused.status, 400, 'a body whose digest differs is answered 400');

    const files = readdirSync(dir).sort();
    const expected = [...new Set(blobs.map((b) => `blob-${sha256(b)}`))].sort();
    t.same(files, expected, 'one file per blob answered 201, none for the refused one, no upload file left');
    for (const b of blobs) t.equal(sha256(readFileSync(join(dir, `blob-${sha256(b)}`))), sha256(b), `the ${b.length}-byte blob's file holds its bytes`);
  });
}
