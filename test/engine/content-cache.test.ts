/** The manifest content cache stays within its byte bound and keeps recently used entries. */
import t from 'tap';
import { ENTRY_OVERHEAD, ManifestContentCache } from '../../engine/registry/content-cache.js';

const entry = (n: number) => ({ mediaType: 'm', bytes: Buffer.alloc(n) });
/** Bound of five entries of 200 bytes. */
const FIVE = 5 * (200 + ENTRY_OVERHEAD);

t.test('evicts least recently used past the bound', async (t) => {
  const c = new ManifestContentCache(FIVE);
  c.set('a', entry(200));
  c.set('b', entry(200));
  c.set('c', entry(200));
  t.ok(c.get('a'), 'a used again');
  c.set('d', entry(200));
  c.set('e', entry(200)); // five entries: all fit
  t.ok(c.get('b'));
  c.set('f', entry(200)); // over: evicts the least recently used (c)
  t.notOk(c.get('c'), 'c evicted');
  t.ok(c.get('a') && c.get('b') && c.get('d') && c.get('e') && c.get('f'));
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
