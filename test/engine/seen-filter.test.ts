/** The doorkeeper (engine/seen-filter.ts): a key's first sighting is told apart from later ones. */
import t from 'tap';
import { SeenFilter } from '../../engine/seen-filter.js';

t.test('a key is a first sighting once, then seen', async (t) => {
  const f = new SeenFilter();
  const keys = Array.from({ length: 5_000 }, (_, i) => `bench/r${i % 100}\u241fv${i}`);
  let first = 0;
  for (const k of keys) if (f.firstSighting(k)) first++;
  t.ok(first > 4_900, `${first} of 5,000 distinct keys were first sightings (the rest: false positives)`);
  for (const k of keys) if (f.firstSighting(k)) { t.fail(`${k} a first sighting twice`); return; }
  t.pass('every key seen again is told seen');
});

t.test('after bits / 8 first sightings the filter starts over, keeping false positives under 5 %', async (t) => {
  const f = new SeenFilter(1 << 12); // resets after 512 first sightings
  let falsePositives = 0;
  const n = 50_000;
  for (let i = 0; i < n; i++) if (!f.firstSighting(`k${i}`)) falsePositives++;
  t.ok(falsePositives < n * 0.05, `${falsePositives} of ${n} new keys passed for seen`);
  // Right after a reset, keys seen before it are first sightings again.
  const g = new SeenFilter(1 << 12);
  g.firstSighting('x');
  t.notOk(g.firstSighting('x'), 'seen');
  for (let i = 0; i < 600; i++) g.firstSighting(`y${i}`); // over 512 first sightings: a reset
  t.ok(g.firstSighting('x'), 'forgotten at the reset');
});

t.test('refuses a size that is not a power of two of at least 64 bits', async (t) => {
  t.throws(() => new SeenFilter(100), RangeError);
  t.throws(() => new SeenFilter(32), RangeError);
});
