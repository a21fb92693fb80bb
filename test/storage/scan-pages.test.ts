/**
 * Walks of a keyspace (engine/storage/scan.ts `scanKeyspace`) on a real LMDB store: every entry
 * once, in key order; on LMDB, whose reads hold the event loop,
 * pages are sized by the time their reads take (the first `SYNC_FIRST_PAGE` entries, a read that
 * took long is followed by a smaller page, each between half and twice the one before), while a store
 * without synchronous reads (as PostgreSQL) is read `SCAN_PAGE` entries at a time. The reads are
 * timed by wrapping the store's own `range`.
 */
import t, { type Test } from 'tap';
import { open } from 'lmdb';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import { keyspace, type MetadataReader, type RangeOptions } from '../../engine/storage/metadata.js';
import { nextSyncPage, SCAN_PAGE, scanKeyspace, SYNC_FIRST_PAGE, SYNC_MIN_PAGE, SYNC_PAGE_MS } from '../../engine/storage/scan.js';

const ks = keyspace<{ n: number }>('registry', 'scan-pages-test');
const TOTAL = 2 * SCAN_PAGE + 7;

interface Read { start: number; end: number; limit: number }

/** A store of `TOTAL` entries `k000000`…, and `timed(networked)`: a reader over it that records every `range`. */
async function fixture(t: Test) {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const store = new LmdbMetadataStore(open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack', overlappingSync: false }));
  t.teardown(() => store.close());
  await store.transact(async (tx) => { for (let i = 0; i < TOTAL; i++) tx.put(ks, `k${String(i).padStart(6, '0')}`, { n: i }); });
  const timed = (reads: Read[], networked = false): MetadataReader => Object.create(store, {
    range: { value: async (k: typeof ks, opts?: RangeOptions) => {
      const start = performance.now();
      const out = await store.range(k, opts);
      reads.push({ start, end: performance.now(), limit: opts?.limit ?? Infinity });
      return out;
    } },
    // A networked store has no synchronous fast path.
    ...(networked ? { getNow: { value: undefined } } : {}),
  });
  return { store, timed };
}

t.test('on LMDB, pages are sized by the time their reads take', async (t) => {
  const { timed } = await fixture(t);
  const reads: Read[] = [];
  let n = 0;
  for await (const e of scanKeyspace(timed(reads), ks)) if (e.value.n === n) n++;
  t.equal(n, TOTAL, 'every entry once, in key order');
  t.equal(reads[0]!.limit, SYNC_FIRST_PAGE + 1, 'the first read asks for the first page and one more entry');
  for (let i = 1; i < reads.length; i++) {
    const [before, now] = [reads[i - 1]!.limit - 1, reads[i]!.limit - 1];
    const took = reads[i - 1]!.end - reads[i - 1]!.start;
    if (now > 2 * before || now < Math.max(SYNC_MIN_PAGE, Math.floor(before / 2)) || now > SCAN_PAGE) t.fail(`page ${i}: ${now} entries after ${before}`);
    // The walk times a read from outside this wrapper, so it saw at least `took`.
    if (took > 2 * SYNC_PAGE_MS && before > SYNC_MIN_PAGE && now >= before) t.fail(`page ${i}: ${now} entries after a read of ${before} that took ${took.toFixed(2)} ms`);
  }
  t.pass(`${reads.length} reads of ${reads.map((r) => r.limit - 1).join(', ')} entries`);
});

t.test('a store without synchronous reads is read SCAN_PAGE entries at a time', async (t) => {
  const { timed } = await fixture(t);
  const reads: Read[] = [];
  let n = 0;
  for await (const e of scanKeyspace(timed(reads, true), ks)) if (e.value.n === n) n++;
  t.equal(n, TOTAL, 'every entry once, in key order');
  t.same(reads.map((r) => r.limit), [SCAN_PAGE + 1, SCAN_PAGE + 1, SCAN_PAGE + 1], 'three reads of a page and one more entry');
});

t.test('nextSyncPage scales the page to SYNC_PAGE_MS, by a half to twice, within its bounds', async (t) => {
  t.equal(nextSyncPage(128, SYNC_PAGE_MS / 4), 256, 'a fast read: twice the page, no more');
  t.equal(nextSyncPage(1024, SYNC_PAGE_MS * 1.6), 640, 'a read 1.6 times too long: the page over 1.6');
  t.equal(nextSyncPage(1024, SYNC_PAGE_MS * 40), 512, 'a read far too long: half the page, no less');
  t.equal(nextSyncPage(SCAN_PAGE, SYNC_PAGE_MS / 10), SCAN_PAGE, 'never past SCAN_PAGE');
  t.equal(nextSyncPage(SYNC_MIN_PAGE, SYNC_PAGE_MS * 100), SYNC_MIN_PAGE, 'never under SYNC_MIN_PAGE');
  t.equal(nextSyncPage(100, 0), 200, 'a read too fast to time: twice the page');
});
