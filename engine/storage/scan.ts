/**
 * Paged reads of a whole keyspace (or one prefix of it) outside a transaction: GC and fsck
 * walk keyspaces of any size without one huge read, yielding to the event loop between
 * pages. Each page is one consistent `range`; the walk as a whole is not a snapshot (callers
 * re-check what they act on inside a transaction).
 *
 * Page sizes. On a networked store (PostgreSQL) a page is `SCAN_PAGE` entries: its read waits on
 * the database, not on the event loop, and larger pages mean fewer statements. On a store whose
 * reads are synchronous (LMDB: it implements `getNow`), a page's `range` reads and decodes every
 * entry in one call on the event loop, and every request of the process waits meanwhile. There,
 * pages are sized by time: the first has `SYNC_FIRST_PAGE` entries, and each next one is scaled
 * from the last read's duration so that a read takes about `SYNC_PAGE_MS`, by a factor between
 * one half and two (a read slowed once by a garbage collection or another thread does not
 * shrink the walk to its smallest pages). Measured 2026-12-06 at 100,000 images, both builds in
 * one run (docs/performance.md "Run W"): with pages of 2,048 a walk of the manifests (the
 * store-size metrics' pass of the time) held the event loop up to 38 ms beside manifest GETs,
 * whose p99 was 16.8 ms; with pages by time, the longest holds were 3–11 ms and the p99 3.27 ms.
 */
import type { Entry, Keyspace, MetadataReader } from './metadata.js';

/** Entries per page of `scanKeyspace` on a networked store; the most per page on any store. */
export const SCAN_PAGE = 2048;

/** Entries of the first page on a store whose reads are synchronous (then sized by time). */
export const SYNC_FIRST_PAGE = 128;

/** Fewest entries per page on a store whose reads are synchronous. */
export const SYNC_MIN_PAGE = 16;

/**
 * Time a page's read aims at on a store whose reads are synchronous, ms: about the longest the
 * walk holds the event loop at once (a page is at most twice the size of the one before).
 */
export const SYNC_PAGE_MS = 1;

/**
 * The size of the page after one of `limit` entries whose read took `readMs` on a store whose
 * reads are synchronous: scaled to take about `SYNC_PAGE_MS`, between half and twice `limit`,
 * within [`SYNC_MIN_PAGE`, `SCAN_PAGE`].
 */
export function nextSyncPage(limit: number, readMs: number): number {
  const scaled = readMs > 0 ? Math.floor((limit * SYNC_PAGE_MS) / readMs) : SCAN_PAGE;
  return Math.max(SYNC_MIN_PAGE, Math.floor(limit / 2), Math.min(SCAN_PAGE, 2 * limit, scaled));
}

/**
 * Iterates the entries of `ks` in key order (only keys under `prefix` when given), a page per
 * read (see the file header for their size), yielding to the event loop between pages.
 */
export async function* scanKeyspace<V>(reader: MetadataReader, ks: Keyspace<V>, prefix?: string): AsyncGenerator<Entry<V>> {
  const synchronous = typeof reader.getNow === 'function';
  let limit = synchronous ? SYNC_FIRST_PAGE : SCAN_PAGE;
  let after: string | undefined;
  for (;;) {
    const t0 = performance.now();
    const page = await reader.range(ks, {
      ...(prefix === undefined ? {} : { prefix }),
      ...(after === undefined ? {} : { start: after }),
      limit: limit + 1,
    });
    const readMs = performance.now() - t0;
    const fresh = after === undefined ? page : page.filter((e) => e.key !== after);
    for (const e of fresh.slice(0, limit)) yield e;
    if (fresh.length < limit) return;
    after = fresh[limit - 1]!.key;
    if (synchronous) limit = nextSyncPage(limit, readMs);
    await new Promise((r) => setImmediate(r));
  }
}
