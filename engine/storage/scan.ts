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
 * entries per read. Between pages it yields to the event loop; with `pace` > 0 it waits `pace`
 * times as long as the page's read took, so a walk of any size holds the store (a PostgreSQL
 * session, the event loop for LMDB) at most 1 / (1 + pace) of its time while it runs: the
 * background passes over whole keyspaces (the store-size metrics) use it so that their cost,
 * which grows with the registry, never crowds out requests.
 */
export async function* scanKeyspace<V>(reader: MetadataReader, ks: Keyspace<V>, prefix?: string, opts: { pace?: number } = {}): AsyncGenerator<Entry<V>> {
  const pace = opts.pace ?? 0;
  let after: string | undefined;
  for (;;) {
    const t0 = performance.now();
    const page = await reader.range(ks, {
      ...(prefix === undefined ? {} : { prefix }),
      ...(after === undefined ? {} : { start: after }),
      limit: SCAN_PAGE + 1,
    });
    const readMs = performance.now() - t0;
    const fresh = after === undefined ? page : page.filter((e) => e.key !== after);
    for (const e of fresh.slice(0, SCAN_PAGE)) yield e;
    if (fresh.length < SCAN_PAGE) return;
    after = fresh[SCAN_PAGE - 1]!.key;
    if (pace > 0) await new Promise((r) => setTimeout(r, pace * readMs));
    else await new Promise((r) => setImmediate(r));
  }
}
