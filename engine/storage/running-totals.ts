/**
 * Running totals of a keyspace's records (how many, and their bytes), kept in the store beside
 * the records and changed in the same transactions, so reading them costs a few small records
 * however large the registry grows. (They were read by a paged pass over every record, which at
 * 100,000 images decoded every manifest on each refresh: its garbage, collected during the
 * requests that followed, set their p99; docs/performance.md "Store totals".)
 *
 * Layout, in a keyspace of the owning domain (`Keyspace<Totals>`):
 * - `base`: the totals up to the last fold;
 * - `delta` + separator + time + separator + random: one record per transaction that changed the
 *   totals (created, removed or resized records), holding that change. A transaction only adds
 *   its own new key and reads none of the totals, so two commits never conflict over them (one
 *   row that every push updated would serialize every push of a cluster on it).
 * - The totals are `base` plus every delta. `fold` moves deltas older than `FOLD_AFTER_MS` into
 *   `base`, `FOLD_PAGE` deltas per transaction; younger ones stay, so a fold rarely reads a key
 *   that a transaction committing now could add (when it does, the serializable contract retries
 *   one of the two). The metrics read the totals every 2 s and fold when `FOLD_AT_DELTAS` or more
 *   wait, so a read is one range of a few hundred small records at most (one snapshot). (One fold of a minute's deltas, about 20,000 records at 100 pushes a second,
 *   held the event loop 56–78 ms in one LMDB write transaction: docs/performance.md "Store totals".)
 *
 * Exact while every change goes through `add` (each domain calls it where it writes those
 * records: blobs/refs.ts, registry/registry.ts and manifest-records.ts); schema migration 9 set
 * the first base from the records (engine/migrations.ts), and `slipway fsck` compares the totals
 * with the records and `--repair` sets them again (`check`, `recount`).
 */
import { randomBytes } from 'node:crypto';
import { key, type Keyspace, type MetadataReader, type MetadataStore, type MetadataTransaction } from './metadata.js';
import { scanKeyspace } from './scan.js';

/** A count of records and their bytes. */
export interface Totals {
  count: number;
  bytes: number;
}

/** Deltas are folded into the base once this old (ms): younger keys may still be committing. */
export const FOLD_AFTER_MS = 1_000;
/** A read that finds this many deltas or more folds them (`readAndFold`). */
export const FOLD_AT_DELTAS = 64;
/** Deltas folded per transaction: one LMDB write transaction of that many removals stays well under a millisecond. */
export const FOLD_PAGE = 256;

const BASE = 'base';
const DELTA = 'delta';

/** A delta's key: time (ms since the epoch, base 36, fixed width so keys sort by it) and 64 random bits. */
function deltaKey(now: number, suffix = randomBytes(8).toString('hex')): string {
  return key(DELTA, Math.max(0, Math.floor(now)).toString(36).padStart(9, '0'), suffix);
}

/** The running totals of one keyspace's records, kept in `ks` (see the file header). */
export class RunningTotals {
  /** Each transaction attempt's one delta record (an attempt is a new object: a retry starts at zero). */
  readonly #pending = new WeakMap<MetadataTransaction, { key: string; totals: Totals }>();

  /**
   * @param ks the owning domain's keyspace for these totals
   * @param clock ms since the epoch (delta keys and the fold's cut-off; tests pass their own)
   */
  constructor(readonly ks: Keyspace<Totals>, readonly clock: () => number = Date.now) {}

  /**
   * Adds `count` records and `bytes` bytes (negative to take away) to the totals, inside the
   * caller's transaction: its one delta record for these totals grows by that.
   */
  add(tx: MetadataTransaction, count: number, bytes: number): void {
    if (count === 0 && bytes === 0) return;
    let p = this.#pending.get(tx);
    if (!p) this.#pending.set(tx, p = { key: deltaKey(this.clock()), totals: { count: 0, bytes: 0 } });
    p.totals = { count: p.totals.count + count, bytes: p.totals.bytes + bytes };
    tx.put(this.ks, p.key, p.totals);
  }

  /**
   * The totals now (`base` plus every delta) and how many deltas are waiting: one range read, so
   * one snapshot, whatever folds commit meanwhile (on this node or another).
   */
  async read(reader: MetadataReader): Promise<{ totals: Totals; deltas: number }> {
    const totals = { count: 0, bytes: 0 };
    let deltas = 0;
    for (const { key: k, value } of await reader.range(this.ks)) {
      totals.count += value.count;
      totals.bytes += value.bytes;
      if (k !== BASE) deltas++;
    }
    return { totals, deltas };
  }

  /**
   * Moves every delta older than `FOLD_AFTER_MS` into `base`, `FOLD_PAGE` per transaction.
   * @returns how many deltas it folded
   */
  async fold(store: MetadataStore): Promise<number> {
    const cutoff = deltaKey(this.clock() - FOLD_AFTER_MS, '');
    let folded = 0;
    for (;;) {
      const n = await store.transact(async (tx) => {
        const old = await tx.range(this.ks, { prefix: DELTA, end: cutoff, limit: FOLD_PAGE });
        if (old.length === 0) return 0;
        const base = (await tx.get(this.ks, BASE)) ?? { count: 0, bytes: 0 };
        for (const { key: k, value } of old) {
          base.count += value.count;
          base.bytes += value.bytes;
          tx.remove(this.ks, k);
        }
        tx.put(this.ks, BASE, { count: base.count, bytes: base.bytes });
        return old.length;
      });
      folded += n;
      if (n < FOLD_PAGE) return folded;
      await new Promise((r) => setImmediate(r));
    }
  }

  /** `read`, then `fold` when `FOLD_AT_DELTAS` or more deltas wait (the fold does not change the totals read). */
  async readAndFold(store: MetadataStore): Promise<Totals> {
    const { totals, deltas } = await this.read(store);
    if (deltas >= FOLD_AT_DELTAS) await this.fold(store);
    return totals;
  }

  /**
   * Sets the totals to `totals` inside the caller's transaction: `base` becomes `totals` and
   * every delta goes. `recount` is the usual way in; tests set chosen totals.
   */
  async reset(tx: MetadataTransaction, totals: Totals): Promise<void> {
    for (const { key: k } of await tx.range(this.ks, { prefix: DELTA })) tx.remove(this.ks, k);
    tx.put(this.ks, BASE, { count: totals.count, bytes: totals.bytes });
  }

  /**
   * Counts every record of `records` (bytes by `sizeOf`) in the caller's transaction and sets the
   * totals to that (schema migration, `slipway fsck --repair`): exact, as one snapshot.
   * @returns the totals set
   */
  async recount<V>(tx: MetadataTransaction, records: Keyspace<V>, sizeOf: (value: V) => number): Promise<Totals> {
    const counted = { count: 0, bytes: 0 };
    for (const { value } of await tx.range(records)) { counted.count++; counted.bytes += sizeOf(value); }
    await this.reset(tx, counted);
    return counted;
  }

  /**
   * The totals as recorded, and as counted from every record of `records` (bytes by `sizeOf`) in
   * one paged pass outside a transaction (`slipway fsck`; not one snapshot while serving).
   */
  async check<V>(reader: MetadataReader, records: Keyspace<V>, sizeOf: (value: V) => number): Promise<{ recorded: Totals; counted: Totals }> {
    const counted = { count: 0, bytes: 0 };
    for await (const { value } of scanKeyspace(reader, records)) { counted.count++; counted.bytes += sizeOf(value); }
    return { recorded: (await this.read(reader)).totals, counted };
  }
}
