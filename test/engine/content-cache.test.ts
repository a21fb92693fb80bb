/** The manifest content cache stays within its byte bound and keeps recently used entries. */
import t from 'tap';
import { ENTRY_OVERHEAD, ManifestContentCache } from '../../engine/registry/content-cache.js';

const entry = (n: number) => ({ mediaType: 'm', bytes: Buffer.alloc(n) });
/**
 * Offers `content` twice, as two reads of the manifest would: once the cache evicts, a manifest is
 * cached at its second read (the doorkeeper, tested below); these tests are about what is kept.
 */
function put(c: ManifestContentCache, digest: string, content: ReturnType<typeof entry>): void {
  c.set(digest, content);
  c.set(digest, content);
}
/** Bound of five entries of 200 bytes. */
const FIVE = 5 * (200 + ENTRY_OVERHEAD);

t.test('keeps what was used lately: a hit in the old generation moves to the young one', async (t) => {
  const c = new ManifestContentCache(FIVE); // each generation holds two entries (2.5 × 456 bytes)
  put(c, 'a', entry(200));
  put(c, 'b', entry(200));
  put(c, 'c', entry(200)); // the young generation {a, b} becomes the old one
  t.ok(c.get('a'), 'a used again: moved to the young generation {c, a}');
  put(c, 'd', entry(200)); // {c, a} becomes old: b, not used since, is dropped
  t.notOk(c.get('b'), 'b evicted');
  t.ok(c.get('a') && c.get('c') && c.get('d'), 'a, c and d kept');
  t.ok(c.bytes <= FIVE);
});

t.test('random use: never over the bound, and what was used within the last half of the bound is kept', async (t) => {
  let seed = 0x5eed;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const max = 64 * 1024;
  const c = new ManifestContentCache(max);
  const sizes = new Map<string, number>();
  /** Keys in order of last use (most recent last). */
  const used: string[] = [];
  const use = (k: string) => { const i = used.indexOf(k); if (i >= 0) used.splice(i, 1); used.push(k); };
  let checked = 0;
  for (let op = 0; op < 20_000; op++) {
    const k = `k${Math.floor(rand() * 400)}`;
    if (rand() < 0.5) {
      const hit = c.get(k);
      if (hit) { t.equal(hit.bytes.length, sizes.get(k)); use(k); }
    } else if (c.get(k) === undefined) {
      const n = 1 + Math.floor(rand() * 2000);
      sizes.set(k, n);
      put(c, k, entry(n));
      use(k);
    } else use(k);
    if (c.bytes > max) { t.fail(`${c.bytes} bytes counted, over the ${max}-byte bound`); return; }
    // Walking back from the most recent use: every entry whose own cost and the costs of all
    // entries used after it fit in half the bound is still cached.
    let after = 0;
    for (let i = used.length - 1; i >= 0; i--) {
      const cost = sizes.get(used[i]!)! + ENTRY_OVERHEAD;
      if (after + cost > max / 2) break;
      if (!c.has(used[i]!)) { t.fail(`${used[i]} used within the last ${after + cost} bytes but evicted`); return; }
      after += cost;
      checked++;
    }
  }
  t.ok(checked > 100_000, `${checked} recent entries found cached`);
});

t.test('does not cache entries over a quarter of the bound', async (t) => {
  const c = new ManifestContentCache(1000);
  c.set('big', entry(251));
  t.notOk(c.get('big'));
});

t.test('a manifest made from a string does not keep a slab of the shared Buffer pool alive', async (t) => {
  const c = new ManifestContentCache();
  const text = JSON.stringify({ schemaVersion: 2, layers: ['x'.repeat(500)] });
  const pooled = Buffer.from(text);
  t.ok(pooled.buffer.byteLength > pooled.length, `Buffer.from of ${pooled.length} bytes is a view on a ${pooled.buffer.byteLength}-byte pool slab`);
  c.set('d', { mediaType: 'm', bytes: pooled });
  const kept = c.get('d')!.bytes;
  t.equal(kept.toString(), text, 'the same bytes');
  t.equal(kept.buffer.byteLength, kept.length, 'held in memory of its own size');
  t.equal(c.bytes, pooled.length + ENTRY_OVERHEAD, 'counted with the per-entry overhead');
});

t.test('while the cache has room, every manifest is cached at its first read', async (t) => {
  const { createHash } = await import('node:crypto');
  const digest = (n: number) => `sha256:${createHash('sha256').update(String(n)).digest('hex')}`;
  const c = new ManifestContentCache(); // 8 MiB: room for every entry below
  for (let i = 0; i < 1000; i++) c.set(digest(i), entry(100));
  for (let i = 0; i < 1000; i++) if (!c.get(digest(i))) { t.fail(`${digest(i)} not cached at its first read`); return; }
  t.equal(c.bytes, 1000 * (100 + ENTRY_OVERHEAD));
});

t.test('once the cache evicts, a manifest is cached at its second read, not its first (the doorkeeper)', async (t) => {
  const { createHash } = await import('node:crypto');
  const digest = (n: number) => `sha256:${createHash('sha256').update(String(n)).digest('hex')}`;
  const c = new ManifestContentCache(2 * 1000 * (100 + ENTRY_OVERHEAD) + 1); // a generation holds 1,000 entries
  for (let i = 0; i < 1001; i++) c.set(`sha256:fill${i}`, entry(100)); // fills the young generation once: the cache evicts
  const base = c.bytes;
  for (let i = 0; i < 1000; i++) c.set(digest(i), entry(100));
  const cachedAtFirst = Array.from({ length: 1000 }, (_, i) => c.has(digest(i))).filter(Boolean).length;
  t.equal(cachedAtFirst, 0, 'none of 1,000 manifests read once is cached');
  t.equal(c.bytes, base, 'and the cache counts no more bytes');
  for (let i = 0; i < 1000; i++) c.set(digest(i), entry(100));
  let cached = 0;
  for (let i = 0; i < 1000; i++) if (c.has(digest(i))) cached++;
  t.ok(cached >= 999, `${cached} of 1,000 manifests read twice are cached (the young generation holds 1,000)`);
});

t.test('the doorkeeper starts over: after many one-time reads, most digests read once are still not cached', async (t) => {
  const { createHash } = await import('node:crypto');
  const digest = (n: number) => `sha256:${createHash('sha256').update(`x${n}`).digest('hex')}`;
  const c = new ManifestContentCache(2 * 1000 * (10 + ENTRY_OVERHEAD));
  for (let i = 0; i < 1001; i++) c.set(`sha256:fill${i}`, entry(10)); // the cache evicts from here on
  const n = 200_000; // several resets' worth of first sightings
  let cached = 0;
  for (let i = 0; i < n; i++) {
    c.set(digest(i), entry(10));
    if (c.has(digest(i))) cached++;
  }
  // A digest passes for seen when both probes hit bits set since the last reset (at most
  // 32,768 sightings over 262,144 bits: under 5 %).
  t.ok(cached < n * 0.06, `${cached} of ${n} manifests read once were cached (false positives)`);
});
