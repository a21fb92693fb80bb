/**
 * When the store-size gauges read the store again (server/ops/metrics.ts `StoreTotals`): a pass
 * starts on a scrape once `STORE_READ_MS`, or `STORE_READ_SPACING` times the last pass's duration
 * if longer, has passed since that pass started; one pass at a time. The clock is the test's,
 * moved by hand; each pass's duration is set by moving it while the pass runs.
 */
import t from 'tap';
import { SCRAPE_WAIT_MS, STORE_READ_MS, STORE_READ_SPACING, StoreTotals, type StoreSizes } from '../../server/ops/metrics.js';

t.test('a pass that took long spaces the next one by its duration times the spacing', async (t) => {
  let now = 0;
  let passes = 0;
  let passMs = 0;
  const totals = new StoreTotals(async () => {
    passes++;
    await Promise.resolve();
    now += passMs; // the pass takes passMs of the test's clock
    return { blobs: passes, blobBytes: 0, manifests: 0, manifestBytes: 0 } satisfies StoreSizes;
  }, () => now);

  passMs = 10;
  t.equal((await totals.recent())?.blobs, 1, 'the first scrape reads the store');
  now = STORE_READ_MS - 1;
  t.equal((await totals.recent())?.blobs, 1, 'a short pass: no new one before STORE_READ_MS');
  now = STORE_READ_MS;
  passMs = 1000; // this pass is slow (a large registry)
  t.equal((await totals.recent())?.blobs, 2, 'a new pass at STORE_READ_MS');
  const next = STORE_READ_MS + STORE_READ_SPACING * passMs;
  now = next - 1;
  t.equal((await totals.recent())?.blobs, 2, `after a ${passMs} ms pass: none before ${STORE_READ_SPACING} × that`);
  t.equal(totals.ageSeconds(), Math.round((next - 1 - (STORE_READ_MS + passMs)) / 100) / 10, 'the age says how old the totals are');
  now = next;
  passMs = 10;
  t.equal((await totals.recent())?.blobs, 3, 'and one then');
  now += STORE_READ_MS;
  t.equal((await totals.recent())?.blobs, 4, 'a short pass again: back to STORE_READ_MS');
});

t.test('one pass at a time: scrapes during a pass share it; a failed pass keeps the last totals', async (t) => {
  let now = 0;
  let passes = 0;
  let release: (() => void) | undefined;
  let fail = false;
  const totals = new StoreTotals(async () => {
    passes++;
    await new Promise<void>((r) => { release = r; });
    if (fail) throw new Error('store unavailable');
    return { blobs: passes, blobBytes: 0, manifests: 0, manifestBytes: 0 };
  }, () => now);
  const a = totals.recent();
  now = SCRAPE_WAIT_MS / 2; // a second scrape while the pass runs, within the first one's wait
  const b = totals.recent();
  release!();
  t.same([(await a)?.blobs, (await b)?.blobs], [1, 1], 'both scrapes got the one pass');
  t.equal(passes, 1);
  now += STORE_READ_SPACING * STORE_READ_MS;
  fail = true;
  const c = totals.recent();
  now += 5 * STORE_READ_MS; // the failing pass takes long (a statement that times out)
  release!();
  t.equal((await c)?.blobs, 1, 'a failed pass: the last totals');
  t.equal(totals.up, false, 'and up is false');
  // The failed pass took long: the next one is not spaced by it.
  now += STORE_READ_MS;
  fail = false;
  const d = totals.recent();
  t.equal(passes, 3, `a new pass ${STORE_READ_MS} ms after a failed one started`);
  release!();
  t.equal((await d)?.blobs, 3, 'its totals');
  t.equal(totals.up, true, 'up again');
});
