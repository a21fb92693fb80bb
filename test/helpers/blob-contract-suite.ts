/**
 * The blob contract suite (engine/blobs/contract.ts): one set of tests every blob backend must
 * pass, run against the filesystem in test/blobs/fs-backend.test.ts and against a real Ceph
 * RADOS Gateway in test/blobs/s3-backend.test.ts.
 */
import { randomBytes, createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Test } from 'tap';
import type { Digest } from '../../engine/digest.js';
import type { BlobBackend, ByteRange } from '../../engine/blobs/contract.js';
import type { ErrorCode } from '../../engine/errors.js';
import { waitFor } from './daemons.js';

/** A backend on empty storage, and a way to open a second instance on the same storage (a restart). */
export interface SuiteTarget {
  backend: BlobBackend;
  reopen(): BlobBackend;
}

/** How the suite reaches a backend. */
export interface SuiteOptions {
  /** A backend on fresh, empty storage (called once per subtest). */
  fresh(): Promise<SuiteTarget>;
  /** The backend's part size, or a representative buffer size (bytes): sizes are chosen around it. */
  partSize: number;
  /**
   * Most bytes a session may keep in memory only, storing nothing yet (S3: `putLimit`; default
   * `partSize`): the crash-recovery test writes more than that, so the session left something.
   */
  heldBytes?: number;
}

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}` as Digest;
let ids = 0;
const newId = () => `s${process.pid}-${Date.now().toString(36)}-${ids++}`;

async function readAll(s: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** Chunk sizes: fixed, or random in [1, max] when `fixed` is 0. */
function* chunks(bytes: Buffer, fixed: number, max: number): Generator<Buffer> {
  for (let at = 0; at < bytes.length;) {
    const n = fixed || 1 + Math.floor(Math.random() * max);
    yield bytes.subarray(at, at + n);
    at += n;
  }
}

/** Appends `bytes` in chunks to a new session and returns the writer (not committed). */
async function upload(b: BlobBackend, bytes: Buffer, chunk = 65_537, id = newId(), jitter = false) {
  const w = await b.create(id);
  for (const c of chunks(bytes, chunk, 3 * 1024 * 1024)) {
    await w.append(c);
    if (jitter && Math.random() < 0.3) await new Promise((r) => setImmediate(r));
  }
  return w;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

async function rejectsCode(t: Test, p: Promise<unknown>, code: ErrorCode, msg: string) {
  await t.rejects(p, { name: 'SlipwayError', code }, msg);
}

/** Registers the contract tests on `t`. */
export function blobContractSuite(t: Test, opts: SuiteOptions): void {
  const P = opts.partSize;

  t.test('committed bytes read back byte-identical, any size and chunking', async (t) => {
    const { backend } = await opts.fresh();
    const cases: Array<[number, number]> = [
      [0, 1], [1, 1], [1000, 7], [P - 1, 65_537], [P, P], [P + 1, 1_000_003], [3 * P + 12_345, 0], [2 * P, 2 * P + 5],
    ];
    for (const [size, chunk] of cases) {
      const bytes = randomBytes(size);
      const w = await upload(backend, bytes, chunk);
      t.equal(w.size, size, `${size} B: size after appends`);
      const r = await w.commit(sha(bytes));
      t.same(r, { digest: sha(bytes), size, created: true }, `${size} B in ${chunk || 'random'}-byte chunks: committed`);
      t.match(await backend.stat(sha(bytes)), { digest: sha(bytes), size }, `${size} B: stat`);
      t.ok((await readAll(await backend.read(sha(bytes)))).equals(bytes), `${size} B: read back identical`);
    }
    t.same(await collect(backend.sessions()), [], 'no session left behind');
  });

  t.test('a digest mismatch leaves nothing', async (t) => {
    const { backend } = await opts.fresh();
    for (const size of [10, 2 * P + 3]) {
      const bytes = randomBytes(size);
      const claimed = sha(Buffer.from('something else'));
      const w = await upload(backend, bytes);
      await rejectsCode(t, w.commit(claimed), 'DIGEST_INVALID', `${size} B: commit refused`);
      t.equal(await backend.stat(claimed), undefined, `${size} B: nothing under the claimed digest`);
      t.equal(await backend.stat(sha(bytes)), undefined, `${size} B: nothing under the real digest`);
      t.same(await collect(backend.list()), [], `${size} B: no blob listed`);
      t.same(await collect(backend.sessions()), [], `${size} B: no session left`);
      await rejectsCode(t, w.append(Buffer.from('x')), 'BLOB_UPLOAD_UNKNOWN', `${size} B: the session is closed`);
    }
  });

  t.test('ranged reads', async (t) => {
    const { backend } = await opts.fresh();
    const bytes = randomBytes(P + 100);
    const d = sha(bytes);
    await (await upload(backend, bytes)).commit(d);
    const ranges: ByteRange[] = [
      { offset: 0, length: 1 }, { offset: 0 }, { offset: 17, length: 1000 }, { offset: P - 5, length: 50 },
      { offset: P + 99 }, { offset: 100, length: P * 4 },
    ];
    for (const r of ranges) {
      const want = bytes.subarray(r.offset, r.length === undefined ? undefined : r.offset + r.length);
      t.ok((await readAll(await backend.read(d, r))).equals(want), `range ${JSON.stringify(r)}`);
    }
    await rejectsCode(t, backend.read(d, { offset: P + 100 }), 'RANGE_NOT_SATISFIABLE', 'offset at the end');
    await rejectsCode(t, backend.read(d, { offset: -1 }), 'BYTE_RANGE_INVALID', 'negative offset');
    await rejectsCode(t, backend.read(d, { offset: 0, length: 0 }), 'BYTE_RANGE_INVALID', 'empty length');
    await rejectsCode(t, backend.read(sha(Buffer.from('absent')), { offset: 0 }), 'BLOB_UNKNOWN', 'absent blob');
  });

  t.test('positional reader', async (t) => {
    const { backend } = await opts.fresh();
    const bytes = randomBytes(P + 4097);
    const d = sha(bytes);
    await (await upload(backend, bytes)).commit(d);
    const r = await backend.open(d);
    t.equal(r.size, bytes.length, 'size');
    const buf = Buffer.alloc(P);
    const parts: Buffer[] = [];
    for (let at = 0; at < r.size;) {
      const n = await r.read(buf, at);
      t.ok(n > 0, `bytes at ${at}`);
      parts.push(Buffer.from(buf.subarray(0, n)));
      at += n;
    }
    t.ok(Buffer.concat(parts).equals(bytes), 'read back identical, reusing one buffer');
    t.equal(await r.read(buf, r.size), 0, 'nothing past the end');
    await r.close();
    await r.close();
    await rejectsCode(t, backend.open(sha(Buffer.from('absent'))), 'BLOB_UNKNOWN', 'absent blob');
  });

  t.test('delete of one version', async (t) => {
    const { backend } = await opts.fresh();
    const bytes = randomBytes(1000);
    const d = sha(bytes);
    await (await upload(backend, bytes)).commit(d);
    const st = await backend.stat(d);
    t.ok(st?.version, 'a version');
    t.ok(st?.modifiedAt instanceof Date, 'a commit time');
    t.equal(await backend.delete(d, `${st!.version}x`), false, 'another version: not deleted');
    t.ok((await readAll(await backend.read(d))).equals(bytes), 'bytes intact');
    t.equal(await backend.delete(d, st!.version), true, 'that version: deleted');
    t.equal(await backend.stat(d), undefined, 'gone');
    t.equal(await backend.delete(d, st!.version), false, 'absent: false');
    if (backend.recover) await backend.recover(() => true);
    t.equal(await backend.stat(d), undefined, 'recover brings back no deleted blob');
  });

  t.test('dedupe: a second commit of a digest keeps the first object', async (t) => {
    const { backend } = await opts.fresh();
    for (const size of [100, P + 1]) {
      const bytes = randomBytes(size);
      const d = sha(bytes);
      t.equal((await (await upload(backend, bytes)).commit(d)).created, true, `${size} B: first commit creates`);
      t.same(await (await upload(backend, bytes, 4097)).commit(d), { digest: d, size, created: false }, `${size} B: second dedupes`);
      t.ok((await readAll(await backend.read(d))).equals(bytes), `${size} B: bytes unchanged`);
    }
    t.same(await collect(backend.sessions()), [], 'no session left');
  });

  t.test('delete and list', async (t) => {
    const { backend } = await opts.fresh();
    const blobs = [randomBytes(1), randomBytes(5000), randomBytes(P + 7)];
    for (const b of blobs) await (await upload(backend, b)).commit(sha(b));
    t.same((await collect(backend.list())).sort(), blobs.map(sha).sort(), 'list gives every committed digest');
    t.equal(await backend.delete(sha(blobs[1])), true, 'delete of a present blob');
    t.equal(await backend.delete(sha(blobs[1])), false, 'delete of an absent blob');
    t.equal(await backend.stat(sha(blobs[1])), undefined, 'stat after delete');
    await rejectsCode(t, backend.read(sha(blobs[1])), 'BLOB_UNKNOWN', 'read after delete');
    t.same((await collect(backend.list())).sort(), [sha(blobs[0]), sha(blobs[2])].sort(), 'list after delete');
    t.ok((await readAll(await backend.read(sha(blobs[2])))).equals(blobs[2]), 'the others are intact');
  });

  t.test('session ids and abort', async (t) => {
    const { backend } = await opts.fresh();
    await rejectsCode(t, backend.create('../escape'), 'BLOB_UPLOAD_INVALID', 'a malformed id');
    const id = newId();
    const w = await upload(backend, randomBytes(2 * P + 1), 300_001, id);
    await rejectsCode(t, backend.create(id), 'BLOB_UPLOAD_INVALID', 'an id in use');
    await w.abort();
    await w.abort();
    t.notOk((await collect(backend.sessions())).some((s) => s.id === id), 'aborted session not listed');
    t.same(await collect(backend.list()), [], 'no blob');
    const again = await backend.create(id);
    await again.abort();
  });

  t.test('crash recovery: an abandoned session is listed by a new instance and aborted', async (t) => {
    const target = await opts.fresh();
    const id = newId();
    const before = Date.now();
    const held = Math.max(P, opts.heldBytes ?? P);
    const bytes = randomBytes(2 * held + 11);
    const head = bytes.subarray(0, held + 5);
    await upload(target.backend, head, 1_048_573, id); // never committed: the process "dies"
    const restarted = target.reopen();
    const listed = await waitFor('the abandoned session to be listed', async () =>
      (await collect(restarted.sessions())).find((s) => s.id === id));
    t.ok(listed.startedAt.getTime() >= before - 2000 && listed.startedAt.getTime() <= Date.now() + 2000, 'startedAt is when it began');
    const resumed = await restarted.resume(id);
    if (resumed) {
      t.equal(resumed.size, head.length, 'a resumed session has its bytes so far');
      await resumed.append(bytes.subarray(head.length));
      t.same(await resumed.commit(sha(bytes)), { digest: sha(bytes), size: bytes.length, created: true }, 'resumed and committed (re-hashed)');
      t.ok((await readAll(await restarted.read(sha(bytes)))).equals(bytes), 'resumed blob identical');
    } else {
      t.comment(`${restarted.kind}: sessions are not resumable after a restart`);
      await restarted.abortSession(id);
      await restarted.abortSession(id);
    }
    t.notOk((await collect(restarted.sessions())).some((s) => s.id === id), 'nothing of the session remains');
  });

  t.test('hash fed beside vectored writes, across suspends and background syncs', async (t) => {
    const { backend } = await opts.fresh();
    for (const size of [0, 1000, 2 * P + 3]) {
      const bytes = randomBytes(size);
      const w = await backend.create(newId());
      t.same((await collect(backend.sessions())).length, 0, `${size} B: a created session is not stored before its first bytes`);
      let at = 0;
      for (let request = 0; at < size || request === 0; request++) {
        const batch: Buffer[] = [];
        for (let i = 0; i < 3 && at < size; i++) {
          const n = Math.min(size - at, 1 + Math.floor(Math.random() * (P / 2)));
          batch.push(bytes.subarray(at, at + n));
          at += n;
        }
        const hashed = Promise.all(batch.map((b) => new Promise<void>((resolve) => w.feedHash(b, resolve))));
        const syncing = w.sync(); // may run beside the write
        await Promise.all([w.write(batch), hashed, syncing]);
        w.suspend(); // between requests
      }
      t.equal(w.size, size, `${size} B: size after the writes`);
      t.same(await w.commit(sha(bytes)), { digest: sha(bytes), size, created: true }, `${size} B: committed by the running hash`);
      t.ok((await readAll(await backend.read(sha(bytes)))).equals(bytes), `${size} B: read back identical`);
    }
    t.same(await collect(backend.sessions()), [], 'no session left');
  });

  t.test('bytes written but not hashed: the commit re-hashes them (and still refuses a wrong digest)', async (t) => {
    const { backend } = await opts.fresh();
    for (const size of [100, P + 17]) {
      const bytes = randomBytes(size);
      const w = await backend.create(newId());
      await new Promise<void>((resolve) => w.feedHash(bytes.subarray(0, 10), resolve));
      await w.write([bytes]);
      t.same(await w.commit(sha(bytes)), { digest: sha(bytes), size, created: true }, `${size} B: committed after a re-hash`);
      const bad = await backend.create(newId());
      await bad.write([bytes]);
      await rejectsCode(t, bad.commit(sha(Buffer.from('other'))), 'DIGEST_INVALID', `${size} B: a wrong digest is refused after a re-hash`);
    }
    t.same(await collect(backend.sessions()), [], 'no session left');
  });

  t.test('reuse decides between dedupe and replacement; it is asked only when the digest exists', async (t) => {
    const { backend } = await opts.fresh();
    for (const size of [100, P + 1]) {
      const bytes = randomBytes(size);
      const d = sha(bytes);
      let asked = 0;
      const reuse = (answer: boolean) => (existing: { size: number }) => { asked++; t.equal(existing.size, size, 'asked with the existing blob'); return answer; };
      t.equal((await (await upload(backend, bytes)).commit(d, { reuse: reuse(true) })).created, true, `${size} B: created`);
      t.equal(asked, 0, `${size} B: not asked when absent`);
      const first = await backend.stat(d);
      t.same(await (await upload(backend, bytes)).commit(d, { reuse: reuse(true) }), { digest: d, size, created: false }, `${size} B: reused`);
      t.equal(asked, 1);
      t.same(await (await upload(backend, bytes)).commit(d, { reuse: reuse(false) }), { digest: d, size, created: true }, `${size} B: replaced`);
      t.equal(asked, 2);
      t.not((await backend.stat(d))!.version, first!.version, `${size} B: another version in place`);
      t.ok((await readAll(await backend.read(d))).equals(bytes), `${size} B: bytes intact`);
    }
    t.same(await collect(backend.sessions()), [], 'no session left');
  });

  t.test('a resumed session is cut back to the acknowledged size', async (t) => {
    const target = await opts.fresh();
    const bytes = randomBytes(P + 300);
    const id = newId();
    await (await upload(target.backend, bytes, 100_003, id)).sync(); // then the process "dies"
    const restarted = target.reopen();
    t.equal(await restarted.resume(id, bytes.length + 1), undefined, 'fewer bytes than acknowledged: not resumed');
    const resumed = await restarted.resume(id, P);
    if (!resumed) {
      t.comment(`${restarted.kind}: sessions are not resumable after a restart`);
      await restarted.abortSession(id);
      return;
    }
    t.equal(resumed.size, P, 'cut back');
    await resumed.append(bytes.subarray(P));
    t.equal((await resumed.commit(sha(bytes))).created, true, 'the unacknowledged bytes were rewritten and committed');
  });

  t.test('concurrent commits of one digest: one creates, all succeed, bytes intact', async (t) => {
    const { backend } = await opts.fresh();
    for (let round = 0; round < 5; round++) {
      const size = round % 2 ? P + 1 + Math.floor(Math.random() * P) : 1 + Math.floor(Math.random() * 100_000);
      const bytes = randomBytes(size);
      const d = sha(bytes);
      const writers = await Promise.all(Array.from({ length: 4 }, () => upload(backend, bytes, 0, newId(), true)));
      const results = await Promise.all(writers.map(async (w) => {
        await new Promise((r) => setTimeout(r, Math.random() * 5)); // deliberate: random interleaving (the race)
        return w.commit(d);
      }));
      t.equal(results.filter((r) => r.created).length, 1, `round ${round}: exactly one commit created the blob`);
      t.ok(results.every((r) => r.digest === d && r.size === size), `round ${round}: every commit reports the blob`);
      t.ok((await readAll(await backend.read(d))).equals(bytes), `round ${round}: bytes intact`);
      t.same(await collect(backend.sessions()), [], `round ${round}: no session left`);
      t.equal(await backend.delete(d), true, `round ${round}: deleted`);
    }
  });
}
