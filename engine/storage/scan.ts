/**
 * Paged reads of a whole keyspace (or one prefix of it) outside a transaction: GC, fsck and
 * metrics walk keyspaces of any size without one huge read, yielding to the event loop between
 * pages. Each page is one consistent `range`; the walk as a whole is not a snapshot (callers
 * re-check what they act on inside a transaction).
 */
import type { Entry, Keyspace, MetadataReader } from './metadata.js';

/** Entries per page of `scanKeyspace`. */
export const SCAN_PAGE = 2048;

/**
 * Iterates the entries of `ks` in key order (only keys under `prefix` when given), `SCAN_PAGE`
 * entries per read.
 */
export async function* scanKeyspace<V>(reader: MetadataReader, ks: Keyspace<V>, prefix?: string): AsyncGenerator<Entry<V>> {
  let after: string | undefined;
  for (;;) {
    const page = await reader.range(ks, {
      ...(prefix === undefined ? {} : { prefix }),
      ...(after === undefined ? {} : { start: after }),
      limit: SCAN_PAGE + 1,
    });
    const fresh = after === undefined ? page : page.filter((e) => e.key !== after);
    for (const e of fresh.slice(0, SCAN_PAGE)) yield e;
    if (fresh.length < SCAN_PAGE) return;
    after = fresh[SCAN_PAGE - 1]!.key;
    await new Promise((r) => setImmediate(r));
  }
}
