/**
 * The upload writer over a session's blob writer (the filesystem backend) and the hash thread:
 * bytes fed through `write` (copy) and `region`/`commit` (zero-copy) in any mix land in the
 * session in order, the running hash matches node:crypto, the pool asks for a pause when full,
 * buffer memory follows the bytes received within a global budget, and a lost hash thread
 * reports lost instead of a wrong digest (the commit then re-hashes the session's bytes).
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUFFER_BYTES, POOL_BUFFERS, UploadWriter } from '../../engine/blobs/writer.js';
import { MIN_BUFFER_BYTES, UploadMemory } from '../../engine/blobs/upload-memory.js';
import { inlineHash, type RunningHash } from '../../engine/blobs/running-hash.js';
import { sharedBuffer, sharedPooled, sharedPooledBytes } from '../../engine/blobs/aligned-buffer.js';
import { HashThread } from '../../workers/hash-thread.js';
import { BodyLanes } from '../../engine/blobs/body-lanes.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import type { BlobWriter } from '../../engine/blobs/contract.js';
import type { Digest } from '../../engine/digest.js';
import { sessionFile } from '../helpers/engine.js';
import { feedWriter } from '../helpers/upload-feed.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-writer-'));
const thread = new HashThread();
t.teardown(async () => { await thread.close(); rmSync(dir, { recursive: true, force: true }); });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let sessions = 0;

/** A new session of the filesystem backend in `dir` whose running hash is `hash`; and its file. */
async function session(hash: RunningHash): Promise<{ blob: BlobWriter; file: string }> {
  const id = `w${sessions++}`;
  const blob = await new FsBlobBackend(dir, { newHash: () => hash }).create(id);
  return { blob, file: sessionFile(dir, id) };
}

/** Feeds `data` alternating copy and zero-copy pieces of varied sizes; waits on pauses. */
function feed(writer: UploadWriter, data: Buffer): Promise<number> {
  return feedWriter(writer, data, (i) => ({ size: [1, 4096, 65536, 300_001, BUFFER_BYTES + 7][i % 5]!, region: i % 2 === 1 }));
}

for (const [name, make] of [['inline', inlineHash], ['hash thread', thread.create]] as Array<[string, () => RunningHash]>) {
  t.test(`bytes and digest, ${name}`, async (t) => {
    const data = randomBytes(9 * BUFFER_BYTES + 12345);
    const hash = make();
    const { blob, file } = await session(hash);
    const writer = new UploadWriter(blob);
    const pauses = await feed(writer, data);
    await writer.end();
    t.equal(writer.offset, data.length);
    t.equal(blob.size, data.length, 'the session counts the bytes written');
    t.equal(sha(readFileSync(file)), sha(data), 'file holds the bytes in order');
    t.equal(await hash.digest(), sha(data), 'running hash matches');
    t.ok(pauses >= 0);
  });
}

t.test('a second request on a suspended session appends after the earlier bytes', async (t) => {
  const first = randomBytes(3000);
  const second = randomBytes(2 * BUFFER_BYTES);
  const hash = thread.create();
  const { blob, file } = await session(hash);
  let w = new UploadWriter(blob);
  await feed(w, first);
  await w.end();
  blob.suspend();
  w = new UploadWriter(blob);
  await feed(w, second);
  await w.end();
  const all = Buffer.concat([first, second]);
  t.equal(sha(readFileSync(file)), sha(all));
  t.same(await blob.commit(`sha256:${sha(all)}` as Digest), { digest: `sha256:${sha(all)}`, size: all.length, created: true }, 'committed by the running hash');
});

/** Writes `n` copies (no region a socket could still hold) of 2 MiB of random bytes through `w`, waiting on pauses. */
async function writeCopies(w: UploadWriter, n: number): Promise<void> {
  let more = true;
  for (let i = 0; i < n; i++) {
    if (!more) await new Promise<void>((resolve) => w.onDrain(resolve));
    more = w.write(randomBytes(BUFFER_BYTES));
  }
}

t.test('a body that commits next gives its buffers to the process pool at its end', async (t) => {
  const hash = thread.create();
  const { blob } = await session(hash);
  const w = new UploadWriter(blob, new UploadMemory(64 * 1024 * 1024), true);
  // Empty the pool first (earlier tests leave buffers there), so that the buffers the pool gains
  // are this writer's (a stash of an earlier test expiring meanwhile could only add to them).
  const held: Buffer[] = [];
  for (const size of [4096, 16384, 65536, 262144, 1048576, BUFFER_BYTES]) while (sharedPooled(size)) held.push(sharedBuffer(size));
  const before = sharedPooledBytes();
  await writeCopies(w, 12);
  await w.end();
  await hash.digest(); // every update answered: the hash holds are released
  const gain = sharedPooledBytes() - before;
  t.ok(gain >= 3 * BUFFER_BYTES, `${gain} bytes of buffers in the pool at once`);
});

t.test('a body whose session goes on (a PATCH) leaves its buffers to the session\'s next request, which starts at full size in them', async (t) => {
  const hash = thread.create();
  const { blob } = await session(hash);
  const memory = new UploadMemory(64 * 1024 * 1024);
  const w = new UploadWriter(blob, memory, false);
  await writeCopies(w, 12);
  await w.end();
  // A new writer of another session starts small; the session's next one starts at full size,
  // which it does only when its previous request left full-size buffers in its stash.
  const other = new UploadWriter((await session(thread.create())).blob, memory, false);
  t.equal(other.region()?.length, 4096, 'another session starts at 4 KiB');
  await other.end();
  const next = new UploadWriter(blob, memory, false);
  t.equal(next.region()?.length, BUFFER_BYTES, 'the next request of the session starts at full size');
  await next.end();
  await hash.digest();
});

t.test('with one lane, the next body gets it only once the ending body\'s buffers are back in the pool', async (t) => {
  const lanes = new BodyLanes(1, { bulkBytes: 64 * 1024, maxWaitMs: 60_000, maxHoldMs: 60_000 });
  const writer = async (commitsNext: boolean) => new UploadWriter((await session(thread.create())).blob, new UploadMemory(64 * 1024 * 1024), commitsNext, lanes);
  const a = await writer(true);
  const b = await writer(true);
  const held: Buffer[] = []; // the pool emptied of full-size buffers: A's are the only ones that can come back
  while (sharedPooled(BUFFER_BYTES)) held.push(sharedBuffer(BUFFER_BYTES));
  await writeCopies(a, 8); // A takes the lane and grows full-size buffers
  t.notOk(b.write(randomBytes(128 * 1024)), 'B, past the bulk size, waits for the lane');
  let atGrant = -1;
  const granted = new Promise<void>((resolve) => b.onDrain(() => { atGrant = sharedPooledBytes(); resolve(); }));
  const poolBefore = sharedPooledBytes();
  await Promise.all([a.end(), granted]);
  t.ok(atGrant - poolBefore >= 3 * BUFFER_BYTES, `when B got the lane, A's buffers were in the pool (${atGrant - poolBefore} bytes more)`);
  t.ok(b.write(randomBytes(1024)), 'B reads in the lane');
  await b.end();
});

t.test('a body whose end never finishes (its hash stalls) keeps the next body out of the lane for the longest wait only', async (t) => {
  const maxWaitMs = 150;
  const lanes = new BodyLanes(1, { bulkBytes: 64 * 1024, maxWaitMs, maxHoldMs: 60_000 });
  const stalled: RunningHash = { update: () => {}, digest: async () => null, discard: () => {} }; // never releases a buffer
  const a = new UploadWriter((await session(stalled)).blob, new UploadMemory(64 * 1024 * 1024), true, lanes);
  const b = new UploadWriter((await session(thread.create())).blob, new UploadMemory(64 * 1024 * 1024), true, lanes);
  while (a.write(randomBytes(256 * 1024))); // A holds the lane; its buffers stay with the hash
  const t0 = performance.now(); // before B's wait begins: the machine may stall the test between the two
  t.notOk(b.write(randomBytes(128 * 1024)), 'B, past the bulk size, waits for the lane');
  const woken = new Promise<void>((resolve) => b.onDrain(resolve));
  void a.end().catch(() => {}); // never finishes: its flush waits for the stalled hash
  await woken;
  const waited = performance.now() - t0;
  t.ok(waited >= maxWaitMs - 5 && waited < maxWaitMs + 2000, `B read on after ${waited.toFixed(0)} ms (the longest wait is ${maxWaitMs} ms)`);
  t.equal(lanes.waitsExpired, 1, 'counted as a wait that expired');
  t.ok(b.write(randomBytes(1024)), 'B reads without the lane');
  await b.end();
});

t.test('a failed write wakes the paused transport at once, while the hash still holds the buffers', async (t) => {
  let fail: (e: Error) => void = () => {};
  // A session whose hash never gives a buffer back and whose write fails when the test says.
  const failing = {
    id: 'stalled', size: 0,
    feedHash: () => {},
    write: () => new Promise<void>((_resolve, reject) => { fail = reject; }),
    sync: async () => {},
    suspend: () => {},
  } as unknown as BlobWriter;
  const w = new UploadWriter(failing);
  while (w.write(randomBytes(256 * 1024))); // every buffer busy: with the stalled hash and the pending write
  let woken = false;
  const drained = new Promise<void>((resolve) => w.onDrain(() => { woken = true; resolve(); }));
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(woken, 'paused while the write is pending');
  fail(Object.assign(new Error('the disk is not answering'), { code: 'STORAGE_STALLED' }));
  await drained;
  t.throws(() => w.write(randomBytes(10)), /not answering/, 'the next write learns the error');
  await t.rejects(w.end(), /not answering/, 'the body ends with it');
});

t.test('the pool asks for a pause when every buffer is busy; buffers grow with the bytes received', async (t) => {
  const hash: RunningHash = { update: () => {}, digest: async () => null, discard: () => {} }; // never releases
  const memory = new UploadMemory(64 * 1024 * 1024);
  const w = new UploadWriter((await session(hash)).blob, memory);
  t.ok(w.write(Buffer.alloc(3)));
  t.equal(memory.used, MIN_BUFFER_BYTES, 'a few bytes hold one small buffer, not a full pool');
  let more = w.write(Buffer.alloc(MIN_BUFFER_BYTES - 3));
  while (more) more = w.write(Buffer.alloc(MIN_BUFFER_BYTES));
  const pool = MIN_BUFFER_BYTES * (1 + 4 + 16 + 64);
  t.equal(w.offset, pool, `false once the last of ${POOL_BUFFERS} pool buffers (4 KiB growing to ${BUFFER_BYTES} bytes) is full`);
  t.equal(memory.used, pool);
  t.equal(w.region(), null, 'no region while every buffer is busy');
  t.ok(!w.write(Buffer.alloc(10)), 'overflow still accepted, still paused');
  t.equal(w.offset, pool + 10);
});

t.test('the global budget: a writer waits for memory and resumes when it is given back', async (t) => {
  const memory = new UploadMemory(MIN_BUFFER_BYTES);
  const data = randomBytes(3 * MIN_BUFFER_BYTES);
  const a = new UploadWriter((await session(inlineHash())).blob, memory);
  t.ok(a.write(data.subarray(0, 5)), 'first bytes fit the budget');
  const bs = await session(inlineHash());
  const b = new UploadWriter(bs.blob, memory);
  t.equal(b.region(), null, 'a second writer gets no buffer while the budget is spent');
  let resumed = false;
  b.onDrain(() => { resumed = true; });
  await a.end();
  t.ok(resumed, 'resumed once the first writer gave its buffer back');
  await feed(b, data);
  await b.end();
  t.equal(sha(readFileSync(bs.file)), sha(data));
  t.equal(memory.used, 0, 'every buffer given back');
});

t.test('a hash thread that stops reports lost, never a wrong digest', async (t) => {
  const own = new HashThread();
  const hash = own.create();
  const { blob } = await session(hash);
  const w = new UploadWriter(blob);
  const bytes = randomBytes(2 * BUFFER_BYTES);
  await feed(w, bytes);
  await w.end();
  await own.close();
  t.equal(await hash.digest(), null, 'lost after the thread stopped');
  t.same(await blob.commit(`sha256:${sha(bytes)}` as Digest), { digest: `sha256:${sha(bytes)}`, size: bytes.length, created: true }, 'the commit re-hashed the bytes');
  const after = own.create();
  const data = randomBytes(1000);
  await new Promise<void>((resolve) => after.update(Buffer.from(data), resolve));
  t.equal(await after.digest(), sha(data), 'new hashes after close run inline');
  const plain = thread.create();
  await new Promise<void>((resolve) => plain.update(Buffer.from(data), resolve));
  t.equal(await plain.digest(), null, 'a buffer that cannot be shared makes the hash lost');
});

t.test('background syncs: every 64 MiB by default; from 4 MiB, doubling, for a body that commits next', async (t) => {
  /** Feeds `mib` MiB through a writer over a session whose sync() records the bytes written by then. */
  const run = async (mib: number, commitsNext = false): Promise<number[]> => {
    const { blob } = await session(inlineHash());
    const at: number[] = [];
    const sync = blob.sync.bind(blob);
    blob.sync = async () => { at.push(blob.size / MIB); await sync(); };
    const writer = new UploadWriter(blob, undefined, commitsNext);
    await feed(writer, randomBytes(mib * MIB));
    await writer.end();
    return at;
  };
  const MIB = 1024 * 1024;
  t.same(await run(20), [], 'a 20 MiB PATCH body starts no sync of its own (the commit syncs)');
  const committing = await run(40, true);
  // At most 4, 12 and 28 MiB; a sync that starts while the previous one still runs waits for the
  // next write after it, so a slow disk may give fewer.
  t.ok(committing.length >= 1 && committing.length <= 3, `a 40 MiB body that commits next syncs while it streams (at ${committing.map((m) => m.toFixed(1)).join(', ')} MiB)`);
  t.ok(committing[0]! >= 4 && committing[0]! < 4 + 2 * BUFFER_BYTES / MIB, 'the first sync starts after about 4 MiB');
  for (let i = 1; i < committing.length; i++) {
    t.ok(committing[i]! - committing[i - 1]! >= 4 * 2 ** i, `sync ${i + 1} comes at least ${4 * 2 ** i} MiB after the one before (the interval doubles)`);
  }
});
