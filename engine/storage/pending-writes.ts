/**
 * The writes of one transaction attempt, buffered until its commit, and the view they lay over
 * committed reads (a transaction reads its own writes). Shared by every metadata backend that
 * applies a transaction's writes at its end (engine/storage/metadata.ts).
 */
import { checkKey, checkValue, compareUtf8, resolveRange, type Entry, type Keyspace, type RangeOptions } from './metadata.js';

/** Marks a key removed by the transaction. */
export const REMOVED: unique symbol = Symbol('removed');

/** A pending value: the new value, or REMOVED. */
export type Pending = unknown;

/** One keyspace's pending writes, in write order. */
export interface KeyspaceWrites {
  ks: Keyspace<unknown>;
  entries: Map<string, Pending>;
}

export class PendingWrites {
  /** keyspace name → its pending writes. */
  readonly byKeyspace = new Map<string, KeyspaceWrites>();

  /** Number of keyspaces written (0: the transaction wrote nothing). */
  get size(): number {
    return this.byKeyspace.size;
  }

  put(ks: Keyspace<unknown>, k: string, value: unknown): void {
    if (value === undefined) throw new TypeError(`undefined value for ${ks.name}/${k}; use remove()`);
    this.#entries(ks).set(k, value);
  }

  remove(ks: Keyspace<unknown>, k: string): void {
    this.#entries(ks).set(k, REMOVED);
  }

  /** The pending write of `k`: `{ value }` (undefined when removed), or null when none. */
  lookup<V>(ks: Keyspace<V>, k: string): { value: V | undefined } | null {
    const entries = this.byKeyspace.get(ks.name)?.entries;
    if (!entries?.has(k)) return null;
    const v = entries.get(k);
    return { value: v === REMOVED ? undefined : (v as V) };
  }

  /**
   * A range's committed entries (read with the same options, limit included) with this
   * transaction's pending writes laid over them. The committed read must not have been cut by a
   * limit that pending removals could reveal more entries past: callers read committed ranges
   * without the limit when `hasWrites(ks)` (see `rangeLimitFor`).
   */
  overlay<V>(ks: Keyspace<V>, base: Array<Entry<V>>, opts: RangeOptions | undefined): Array<Entry<V>> {
    const pending = this.byKeyspace.get(ks.name)?.entries;
    if (!pending || pending.size === 0) return base;
    const r = resolveRange(opts);
    const merged = new Map(base.map((e) => [e.key, e.value] as [string, V]));
    for (const [k, v] of pending) {
      if ((r.start !== undefined && compareUtf8(k, r.start) < 0) || (r.end !== undefined && compareUtf8(k, r.end) >= 0)) continue;
      if (v === REMOVED) merged.delete(k);
      else merged.set(k, v as V);
    }
    const keys = [...merged.keys()].sort(compareUtf8);
    if (r.reverse) keys.reverse();
    const limited = r.limit === undefined ? keys : keys.slice(0, r.limit);
    return limited.map((k) => ({ key: k, value: merged.get(k)! }));
  }

  /**
   * The limit to read committed entries with: the caller's, or none when this transaction has
   * written the keyspace (a pending removal inside the first `limit` entries would otherwise
   * hide entries that belong in the result).
   */
  rangeLimitFor(ks: Keyspace<unknown>, opts: RangeOptions | undefined): RangeOptions | undefined {
    if (!opts || opts.limit === undefined || !this.byKeyspace.has(ks.name)) return opts;
    const { limit: _limit, ...rest } = opts;
    return rest;
  }

  #entries(ks: Keyspace<unknown>): Map<string, Pending> {
    let w = this.byKeyspace.get(ks.name);
    if (!w) this.byKeyspace.set(ks.name, (w = { ks, entries: new Map() }));
    return w.entries;
  }
}

/**
 * The write half of a transaction attempt that buffers its writes until commit: `put` and
 * `remove` check the key and record the write. Each backend's attempt extends it with its reads.
 */
export abstract class BufferedWrites {
  readonly writes = new PendingWrites();

  /**
   * Sets `k` to `value` at commit.
   * @throws RangeError for a bad key (metadata.ts `checkKey`); TypeError for a value that is not
   *         plain JSON-representable data (metadata.ts `checkValue`).
   */
  put<V>(ks: Keyspace<V>, k: string, value: V): void {
    checkKey(ks, k);
    if (value !== undefined) checkValue(ks, k, value);
    this.writes.put(ks, k, value);
  }

  /** Removes `k` at commit. @throws RangeError for a bad key. */
  remove<V>(ks: Keyspace<V>, k: string): void {
    checkKey(ks, k);
    this.writes.remove(ks, k);
  }
}
