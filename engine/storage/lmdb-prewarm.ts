/**
 * Prewarm of the embedded store after a start: the records of the keyspaces that hot request
 * paths read by key are visited once, in the background, so their pages are mapped into this
 * process before requests need them (what PostgreSQL's `pg_prewarm` does for its buffer cache).
 *
 * Why: LMDB serves reads from its memory map, and the first read of a page by a process costs a
 * page fault even when the page is in the page cache. On this project's development VM a fault
 * costs 15–40 µs (about 15 µs for an anonymous page, measured with 128 MiB of fresh buffers; 40 µs
 * for a fault on the map, which maps up to 16 neighbouring cached pages at once), against well
 * under a microsecond on bare metal. A manifest GET by tag walks two B-trees (tag, manifest); on
 * a 100,000-image store (532 MiB of LMDB file) a restarted server answered 4,000 random GETs, 8 at
 * a time, at p50 1.0 ms with 13,800 minor faults, then 0.54, 0.54, 0.40, 0.38, 0.38, 0.33 ms as
 * its faults fell to a few hundred per 4,000; the same GETs on a 1,000-image store ran at
 * 0.19–0.29 ms from the start (docs/performance.md "Growth").
 *
 * How: the keys of each database are read in order (`getKeys`, no values decoded or copied),
 * which walks every leaf page, where LMDB keeps each record with its key unless the value is over
 * about 2 KiB (then in overflow pages of its own, not read here).
 *
 * Cost: the reads run in slices of `PREWARM_SLICE_ENTRIES` records between event-loop turns, so
 * requests are served meanwhile; the pages read stay mapped (file-backed RSS, reclaimable page
 * cache, not anonymous memory). Bounded by a budget of pages' bytes, counted per database as the
 * records read times its pages per record (LMDB's statistics: branch and leaf pages over
 * entries).
 */
import type { Database } from 'lmdb';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Records read per slice, between two event-loop turns. */
export const PREWARM_SLICE_ENTRIES = 512;

/** What a prewarm read. */
export interface PrewarmResult {
  /** Records read. */
  entries: number;
  /** Bytes of the pages mapped, as estimated from the records read (the budget counts these). */
  bytes: number;
  /** Wall-clock time, ms. */
  ms: number;
  /** False when the budget or `stopped` ended it before every record was read. */
  complete: boolean;
}

/**
 * Reads the key of every record of `databases` (raw binary handles), in order,
 * `PREWARM_SLICE_ENTRIES` at a time with an event-loop turn between slices, until about
 * `budgetBytes` of pages were read or `stopped()` returns true (checked before each slice: the
 * store is closing).
 * @throws whatever lmdb-js throws for a closed environment (callers log it: nothing depends on it)
 */
export async function prewarmDatabases(databases: ReadonlyArray<Database<Buffer, string>>, budgetBytes: number, stopped: () => boolean = () => false): Promise<PrewarmResult> {
  const t0 = performance.now();
  let entries = 0;
  let bytes = 0;
  const result = (complete: boolean): PrewarmResult => ({ entries, bytes, ms: Math.round(performance.now() - t0), complete });
  for (const db of databases) {
    if (stopped()) return result(false);
    const stats = db.getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; entryCount: number };
    const perRecord = stats.entryCount > 0 ? ((stats.treeBranchPageCount + stats.treeLeafPageCount) * stats.pageSize) / stats.entryCount : 0;
    let after: string | undefined;
    for (;;) {
      if (bytes >= budgetBytes || stopped()) return result(false);
      let read = 0;
      // `start` is inclusive: the slice after `after` begins with `after` itself, skipped.
      for (const key of db.getKeys({ ...(after === undefined ? {} : { start: after }), limit: PREWARM_SLICE_ENTRIES + (after === undefined ? 0 : 1) })) {
        if (key === after) continue;
        read++;
        after = key;
      }
      entries += read;
      bytes += Math.round(read * perRecord);
      if (read < PREWARM_SLICE_ENTRIES) break;
      await nextTurn();
    }
    await nextTurn();
  }
  return result(true);
}
