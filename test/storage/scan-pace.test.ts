/**
 * A paced walk of a keyspace (engine/storage/scan.ts `scanKeyspace` with `pace`): on a real LMDB
 * store of three pages, the walk yields every entry in key order, like an unpaced one, and
 * between two page reads it waits at least `pace` times as long as the first read took. The
 * reads are timed by wrapping the store's own `range`.
 */
import t from 'tap';
import { open } from 'lmdb';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import { keyspace, type MetadataReader } from '../../engine/storage/metadata.js';
import { SCAN_PAGE, scanKeyspace } from '../../engine/storage/scan.js';

const ks = keyspace<{ n: number }>('registry', 'scan-pace-test');

t.test('a paced walk yields what an unpaced one does, and rests pace × each page read between pages', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const store = new LmdbMetadataStore(open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack', overlappingSync: false }));
  t.teardown(() => store.close());
  const total = 2 * SCAN_PAGE + 7;
  await store.transact(async (tx) => { for (let i = 0; i < total; i++) tx.put(ks, `k${String(i).padStart(6, '0')}`, { n: i }); });

  const reads: Array<{ start: number; end: number }> = [];
  const timed: MetadataReader = Object.create(store, {
    range: { value: async (...args: Parameters<MetadataReader['range']>) => {
      const start = performance.now();
      const out = await store.range(...args);
      reads.push({ start, end: performance.now() });
      return out;
    } },
  });
  const pace = 4;
  const paced: number[] = [];
  for await (const e of scanKeyspace(timed, ks, undefined, { pace })) paced.push(e.value.n);
  t.same(paced, Array.from({ length: total }, (_, i) => i), 'every entry once, in key order');
  t.equal(reads.length, 3, 'three page reads');
  for (let i = 1; i < reads.length; i++) {
    const took = reads[i - 1]!.end - reads[i - 1]!.start;
    const rest = reads[i]!.start - reads[i - 1]!.end;
    // Timers fire no earlier than asked, give or take their 1 ms resolution.
    t.ok(rest >= pace * took - 1, `page ${i}: rested ${rest.toFixed(2)} ms after a read of ${took.toFixed(2)} ms`);
  }
  const plain: number[] = [];
  for await (const e of scanKeyspace(store, ks)) plain.push(e.value.n);
  t.same(plain, paced, 'the unpaced walk yields the same');
});
