/**
 * Hashing a buffer in the thread that writes it (workers/hash-thread.ts `HashThreads`,
 * engine/blobs/fs-writer.ts): while several upload sessions have bytes on the hash threads, a
 * session's buffers are hashed and written in one step there. Sessions pushed at once with
 * random piece sizes and random pauses must each end with exactly their bytes in their file and
 * a running hash equal to node:crypto's, over both paths and the switches between them; a lone
 * session keeps hashing beside its writes; a full disk and a lost thread end every session
 * cleanly (an error or a re-hash, every buffer given back, never a wrong digest).
 */
import t from 'tap';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUFFER_BYTES, UploadWriter } from '../../engine/blobs/writer.js';
import { UploadMemory } from '../../engine/blobs/upload-memory.js';
import type { HashFactory, RunningHash } from '../../engine/blobs/running-hash.js';
import { HashThreads } from '../../workers/hash-thread.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import type { BlobWriter } from '../../engine/blobs/contract.js';
import type { Digest } from '../../engine/digest.js';
import { sessionFile } from '../helpers/engine.js';
import { feedWriter } from '../helpers/upload-feed.js';
import { mountTmpfs, tmpfsSkip } from '../helpers/tmpfs.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const seed = Number(process.env.SEED ?? randomInt(2 ** 31));
t.comment(`seed ${seed} (SEED=${seed} repeats the piece sizes; the pauses follow the machine's timing)`);
let state = seed;
/** A deterministic pseudo-random integer in [0, n) from the printed seed (mulberry32). */
function rand(n: number): number {
  state = (state + 0x6d2b79f5) | 0;
  let x = Math.imul(state ^ (state >>> 15), 1 | state);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return (((x ^ (x >>> 14)) >>> 0) % n);
}

/** Counts how the sessions' bytes reached the hash: by `update`, or with their write. */
interface Paths { updates: number; hashAndWrites: number; hashedWithWrite: number }

/** `factory` with every running hash counted into `paths`. */
function counted(factory: HashFactory, paths: Paths): HashFactory {
  return () => {
    const h = factory();
    const spy: RunningHash = {
      update: (bytes, done) => { paths.updates++; h.update(bytes, done); },
      digest: () => h.digest(),
      discard: () => h.discard(),
      prefersHashAndWrite: h.prefersHashAndWrite && (() => h.prefersHashAndWrite!()),
      hashAndWrite: h.hashAndWrite && ((parts, fd, position) => {
        paths.hashAndWrites++;
        paths.hashedWithWrite += parts.filter((p) => p.hash).length;
        return h.hashAndWrite!(parts, fd, position);
      }),
    };
    return spy;
  };
}

/** Feeds `data` in random pieces, copy and zero-copy mixed, pausing at random and when asked. */
async function feed(writer: UploadWriter, data: Buffer): Promise<void> {
  await feedWriter(writer, data, () => ({
    size: [1, 4096, 65536, 300_001, BUFFER_BYTES + 7, 3 * MiB][rand(6)]!,
    region: rand(2) === 0,
    idle: rand(4) === 0 ? () => new Promise((resolve) => (rand(2) ? setImmediate(resolve) : setTimeout(resolve, rand(3)))) : undefined,
  }));
}

/** A session of a filesystem backend in `dir` with running hashes from `newHash`, and its file. */
async function session(dir: string, id: string, newHash: HashFactory): Promise<{ blob: BlobWriter; file: string }> {
  return { blob: await new FsBlobBackend(dir, { newHash }).create(id), file: sessionFile(dir, id) };
}

/** Pushes `sizes.length` sessions at once, each over `requests` requests; returns their data. */
async function pushAtOnce(dir: string, newHash: HashFactory, memory: UploadMemory, sizes: number[], requests = 1) {
  return Promise.all(sizes.map(async (size, i) => {
    const data = randomBytes(size);
    const s = await session(dir, `s${i}-${seed}-${randomInt(1e9)}`, newHash);
    const step = Math.ceil(size / requests);
    for (let at = 0; at < size; at += step) {
      const w = new UploadWriter(s.blob, memory, at + step >= size);
      await feed(w, data.subarray(at, Math.min(size, at + step)));
      await w.end();
    }
    return { ...s, data };
  }));
}

t.test('sessions pushed at once: each file and digest exact, hashed with the writes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-hw-'));
  const threads = new HashThreads(2);
  t.teardown(async () => { await threads.close(); rmSync(dir, { recursive: true, force: true }); });
  for (let round = 0; round < 3; round++) {
    const paths: Paths = { updates: 0, hashAndWrites: 0, hashedWithWrite: 0 };
    const memory = new UploadMemory(64 * MiB);
    const sizes = Array.from({ length: 3 + rand(6) }, () => rand(6) * BUFFER_BYTES + rand(BUFFER_BYTES));
    const pushed = await pushAtOnce(dir, counted(threads.create, paths), memory, sizes, 1 + rand(3));
    for (const [i, p] of pushed.entries()) {
      t.equal(sha(readFileSync(p.file)), sha(p.data), `round ${round}, session ${i} (${p.data.length} bytes): the file holds its bytes in order`);
      const digest = `sha256:${sha(p.data)}` as Digest;
      t.same(await p.blob.commit(digest), { digest, size: p.data.length, created: true }, `round ${round}, session ${i}: the running hash verified it`);
    }
    t.equal(memory.used, 0, `round ${round}: every buffer given back`);
    t.ok(paths.hashAndWrites > 0 && paths.hashedWithWrite > 0, `round ${round}: buffers were hashed with their writes (${paths.hashedWithWrite} in ${paths.hashAndWrites} writes; ${paths.updates} by update)`);
  }
});

t.test('a lone session hashes beside its writes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-hw-'));
  const threads = new HashThreads(2);
  t.teardown(async () => { await threads.close(); rmSync(dir, { recursive: true, force: true }); });
  const paths: Paths = { updates: 0, hashAndWrites: 0, hashedWithWrite: 0 };
  const [p] = await pushAtOnce(dir, counted(threads.create, paths), new UploadMemory(64 * MiB), [12 * BUFFER_BYTES + 5]);
  t.equal(sha(readFileSync(p!.file)), sha(p!.data));
  t.equal(paths.hashAndWrites, 0, 'no buffer waited for its write');
  t.ok(paths.updates >= 12, `every buffer went to the hash at once (${paths.updates})`);
});

t.test('threads that stop while sessions write: the writes complete and the commits re-hash, never a wrong digest', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-hw-'));
  const threads = new HashThreads(2);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const paths: Paths = { updates: 0, hashAndWrites: 0, hashedWithWrite: 0 };
  const memory = new UploadMemory(64 * MiB);
  const factory = counted(threads.create, paths);
  const pushing = pushAtOnce(dir, factory, memory, [16, 12, 14, 10].map((n) => n * BUFFER_BYTES + rand(BUFFER_BYTES)));
  // Stop the threads once the combined path is in use, while the sessions still write.
  while (paths.hashAndWrites === 0) await new Promise((resolve) => setImmediate(resolve));
  await threads.close();
  const pushed = await pushing;
  for (const [i, p] of pushed.entries()) {
    t.equal(sha(readFileSync(p.file)), sha(p.data), `session ${i}: the file holds its bytes`);
    const digest = `sha256:${sha(p.data)}` as Digest;
    t.same(await p.blob.commit(digest), { digest, size: p.data.length, created: true }, `session ${i}: committed with the right digest`);
  }
  t.equal(memory.used, 0, 'every buffer given back');
});

t.test('a disk that fills while sessions write: each ends with STORAGE_FULL or its exact bytes, every buffer back', { skip: tmpfsSkip() }, async (t) => {
  const fs = mountTmpfs(24);
  const threads = new HashThreads(2);
  t.teardown(async () => { await threads.close(); fs.unmount(); });
  fs.fill(10 * MiB);
  const paths: Paths = { updates: 0, hashAndWrites: 0, hashedWithWrite: 0 };
  const memory = new UploadMemory(64 * MiB);
  const factory = counted(threads.create, paths);
  const outcomes = await Promise.all([0, 1, 2, 3].map(async (i) => {
    const data = randomBytes(3 * MiB + rand(MiB));
    const s = await session(fs.dir, `full-${i}`, factory);
    const w = new UploadWriter(s.blob, memory, true);
    try {
      await feed(w, data);
      await w.end();
    } catch (e) {
      // As the upload engine does with an append that failed this way: the writer ends, the session goes.
      await w.end().catch(() => {});
      await s.blob.abort();
      return { i, error: e as Error & { code?: string }, size: s.blob.size, data };
    }
    return { i, error: null, size: s.blob.size, data, file: s.file };
  }));
  const failed = outcomes.filter((o) => o.error);
  t.ok(failed.length > 0, `the disk filled (${failed.length} of 4 sessions failed)`);
  for (const o of failed) t.equal(o.error!.code, 'STORAGE_FULL', `session ${o.i}: STORAGE_FULL (${o.error!.message})`);
  for (const o of outcomes.filter((x) => !x.error)) t.equal(sha(readFileSync(o.file!)), sha(o.data), `session ${o.i}: completed with its bytes`);
  t.equal(memory.used, 0, 'every buffer given back once the failed sessions were aborted');
  t.ok(paths.hashAndWrites > 0, `the combined path ran (${paths.hashAndWrites} writes)`);
});
