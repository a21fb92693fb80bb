/** The manifest content cache stays within its byte bound and keeps recently used entries. */
import t from 'tap';
import { ManifestContentCache } from '../../engine/registry/content-cache.js';

const entry = (n: number) => ({ mediaType: 'm', bytes: Buffer.alloc(n) });

t.test('evicts least recently used past the bound', async (t) => {
  const c = new ManifestContentCache(1000);
  c.set('a', entry(200));
  c.set('b', entry(200));
  c.set('c', entry(200));
  t.ok(c.get('a'), 'a used again');
  c.set('d', entry(200));
  c.set('e', entry(200)); // 1000 bytes: all fit
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
