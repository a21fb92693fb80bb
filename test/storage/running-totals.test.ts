/**
 * Running totals (engine/storage/running-totals.ts) on a real LMDB store and a real PostgreSQL
 * 15: a transaction's adds make one delta record; a retried attempt counts once; `fold` moves
 * only deltas older than `FOLD_AFTER_MS` into the base, `FOLD_PAGE` per transaction, and never
 * changes the totals; `reset`
 * sets them. And a race with random timing: writers commit random adds while folds run and the
 * clock moves, on two stores of one database for PostgreSQL; the totals always equal the sum of
 * the committed adds, and after a last fold no delta is left.
 */
import t, { type Test } from 'tap';
import { open } from 'lmdb';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { prng } from '../helpers/metadata-contract-suite.js';
import { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { keyspace, type MetadataStore } from '../../engine/storage/metadata.js';
import { FOLD_AFTER_MS, FOLD_AT_DELTAS, FOLD_PAGE, RunningTotals, type Totals } from '../../engine/storage/running-totals.js';

const ks = keyspace<Totals>('registry', 'running-totals-test');
const other = keyspace<{ n: number }>('registry', 'running-totals-test-other');

/** The suite against `stores` (two handles of one database, or the same store twice). */
function suite(t: Test, open: () => Promise<[MetadataStore, MetadataStore]>) {
  t.test('adds, retries, folds and resets', async (t) => {
    const [store] = await open();
    let now = 1_000_000;
    const totals = new RunningTotals(ks, () => now);
    await store.transact((tx) => { totals.add(tx, 1, 100); totals.add(tx, 2, 50); totals.add(tx, 0, 0); });
    t.same(await totals.read(store), { totals: { count: 3, bytes: 150 }, deltas: 1 }, 'one transaction, one delta record');

    // A body that conflicts once: the first attempt's adds are thrown away with it.
    let attempts = 0;
    await store.transact(async (tx) => {
      attempts++;
      const x = await tx.get(other, 'x');
      totals.add(tx, 1, 10);
      tx.put(other, 'x', { n: (x?.n ?? 0) + 1 });
      if (attempts === 1) await store.transact((w) => { w.put(other, 'x', { n: 1 }); });
    });
    t.equal(attempts, 2, 'the body ran twice');
    t.same((await totals.read(store)).totals, { count: 4, bytes: 160 }, 'the retried add counted once');

    await store.transact((tx) => { totals.add(tx, -1, -100); });
    t.equal(await totals.fold(store), 0, 'nothing older than FOLD_AFTER_MS: nothing folded');
    now += FOLD_AFTER_MS + 1;
    await store.transact((tx) => { totals.add(tx, 5, 5); });
    t.equal(await totals.fold(store), 3, 'the three older deltas folded');
    t.same(await totals.read(store), { totals: { count: 8, bytes: 65 }, deltas: 1 }, 'the totals unchanged; the young delta kept');

    await store.transact((tx) => totals.reset(tx, { count: 2, bytes: 7 }));
    t.same(await totals.read(store), { totals: { count: 2, bytes: 7 }, deltas: 0 }, 'reset: base only');

    for (let i = 0; i < FOLD_AT_DELTAS; i++) await store.transact((tx) => { totals.add(tx, 1, 1); });
    now += FOLD_AFTER_MS + 1;
    t.same(await totals.readAndFold(store), { count: 2 + FOLD_AT_DELTAS, bytes: 7 + FOLD_AT_DELTAS }, 'readAndFold reads the totals');
    t.same(await totals.read(store), { totals: { count: 2 + FOLD_AT_DELTAS, bytes: 7 + FOLD_AT_DELTAS }, deltas: 0 }, `and folds ${FOLD_AT_DELTAS} deltas`);

    // A backlog is folded FOLD_PAGE deltas per transaction.
    const backlog = 2 * FOLD_PAGE + 3;
    for (let i = 0; i < backlog; i++) await store.transact((tx) => { totals.add(tx, 1, 2); });
    now += FOLD_AFTER_MS + 1;
    let transactions = 0;
    const counting = Object.create(store, { transact: { value: (body: Parameters<MetadataStore['transact']>[0]) => { transactions++; return store.transact(body); } } }) as MetadataStore;
    t.equal(await totals.fold(counting), backlog, `a backlog of ${backlog} deltas folded`);
    t.equal(transactions, 3, `in ${transactions} transactions of at most ${FOLD_PAGE}`);
    t.same(await totals.read(store), { totals: { count: 2 + FOLD_AT_DELTAS + backlog, bytes: 7 + FOLD_AT_DELTAS + 2 * backlog }, deltas: 0 }, 'the totals unchanged by the fold');
    await store.transact((tx) => totals.reset(tx, { count: 0, bytes: 0 }));
  });

  t.test('race: random adds from many writers while folds run and the clock moves', async (t) => {
    const [a, b] = await open();
    const rand = prng(0x5eed ^ Date.now());
    let now = 2_000_000;
    const clock = () => now;
    const onA = new RunningTotals(ks, clock);
    const onB = new RunningTotals(ks, clock);
    await a.transact((tx) => onA.reset(tx, { count: 0, bytes: 0 }));
    const want = { count: 0, bytes: 0 };
    let folding = true;
    const pause = () => new Promise((r) => setTimeout(r, Math.floor(rand() * 4)));
    const writers = Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; i < 40; i++) {
        const store = w % 2 ? b : a;
        const totals = w % 2 ? onB : onA;
        const count = Math.floor(rand() * 5) - 2;
        const bytes = Math.floor(rand() * 2000) - 1000;
        await store.transact(async (tx) => {
          await tx.get(other, `w${w}`); // a read of its own, as a commit's body reads records
          totals.add(tx, count, bytes);
          tx.put(other, `w${w}`, { n: i });
        });
        want.count += count;
        want.bytes += bytes;
        now += Math.floor(rand() * 300);
        await pause();
      }
    });
    const folds = (async () => {
      let n = 0;
      while (folding) {
        n += await (rand() < 0.5 ? onA : onB).fold(rand() < 0.5 ? a : b);
        const seen = await onA.read(rand() < 0.5 ? a : b);
        if (seen.deltas < 0) t.fail('impossible');
        await pause();
      }
      return n;
    })();
    await Promise.all(writers);
    folding = false;
    const folded = await folds;
    t.same((await onA.read(a)).totals, want, `the totals are the sum of 240 committed adds (${folded} deltas folded meanwhile)`);
    t.same((await onB.read(b)).totals, want, 'read through the other store too');
    now += FOLD_AFTER_MS + 1;
    await onA.fold(a);
    t.same(await onB.read(b), { totals: want, deltas: 0 }, 'after a last fold, the base alone');
  });
}

t.test('on LMDB', async (t) => {
  const tmp = tempDir();
  const store = new LmdbMetadataStore(open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack', overlappingSync: false }));
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  suite(t, async () => [store, store]);
});

t.test('on PostgreSQL, two stores of one database', { skip: postgresSkip() }, async (t) => {
  const db = await startPostgres();
  const a = await PostgresMetadataStore.open({ connectionString: db.connectionString });
  const b = await PostgresMetadataStore.open({ connectionString: db.connectionString });
  t.teardown(async () => { await a.close(); await b.close(); await db.stop(); });
  suite(t, async () => [a, b]);
});
