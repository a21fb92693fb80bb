/** RecentMap keeps its latest entries within its bound, in O(1) per operation. */
import t from 'tap';
import { RecentMap } from '../../engine/recent-map.js';

t.test('keeps at least the latest capacity / 2 keys and never more than capacity', async (t) => {
  let seed = 0x2545f491;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const capacity = 100;
  const m = new RecentMap<string, number>(capacity);
  /** Keys in order of their last set (most recent last), with the value set. */
  const order: string[] = [];
  const values = new Map<string, number>();
  for (let op = 0; op < 20_000; op++) {
    const k = `k${Math.floor(rand() * 300)}`;
    if (rand() < 0.6) {
      m.set(k, op);
      const i = order.indexOf(k);
      if (i >= 0) order.splice(i, 1);
      order.push(k);
      values.set(k, op);
    } else if (rand() < 0.1) {
      m.delete(k);
      const i = order.indexOf(k);
      if (i >= 0) order.splice(i, 1);
      values.delete(k);
    }
    if (m.size > capacity) { t.fail(`${m.size} entries held, over the capacity of ${capacity}`); return; }
    // The latest capacity / 2 keys set (and not deleted since) are remembered with their last value.
    for (const key of order.slice(-capacity / 2)) {
      if (m.get(key) !== values.get(key)) { t.fail(`${key}, among the latest ${capacity / 2}, reads ${m.get(key)}, not ${values.get(key)}`); return; }
    }
    // Nothing deleted or never set is remembered.
    if (m.has(k) !== values.has(k) && !order.includes(k)) { t.fail(`${k} deleted but remembered`); return; }
  }
  t.pass('20,000 random operations within the bound, the latest half of it always remembered');
});

t.test('a key deleted is forgotten in both generations', async (t) => {
  const m = new RecentMap<string, number>(4);
  m.set('a', 1);
  m.set('b', 2); // the young generation is full: the next new key makes it the old one
  m.set('c', 3);
  m.set('a', 4); // set again: young holds c and a, old holds a (1) and b
  t.equal(m.get('a'), 4, 'the latest value');
  m.delete('a');
  t.notOk(m.has('a'), 'forgotten');
  t.equal(m.get('a'), undefined);
  t.equal(m.get('b'), 2);
});

t.test('refuses a capacity under 2', async (t) => {
  t.throws(() => new RecentMap(1), RangeError);
});
