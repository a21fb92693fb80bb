/**
 * A MetadataReader that remembers every `get` for its own lifetime: one request that decides
 * many things from the same few records (the catalog deciding access app by app reads one
 * team's membership, the team and the caller's client once, however many apps share them).
 * Reads outside a transaction anyway see no common snapshot (engine/storage/metadata.ts), so a
 * remembered value is what a fresh read during the same request could also have returned.
 * Create one per request and drop it with the request; `range` is not remembered.
 */
import { getEach, type Entry, type Keyspace, type MetadataReader, type RangeOptions, type RecordRef, type RecordValues } from './metadata.js';

export class MemoReader implements MetadataReader {
  readonly #gets = new Map<string, Promise<unknown>>();

  constructor(readonly inner: MetadataReader) {}

  /** The value at `k`: read once, then the same promise (a failed read is not remembered). */
  get<V>(ks: Keyspace<V>, k: string): Promise<V | undefined> {
    const id = `${ks.name}\0${k}`;
    let p = this.#gets.get(id) as Promise<V | undefined> | undefined;
    if (!p) {
      p = this.inner.get(ks, k);
      this.#gets.set(id, p);
      p.catch(() => this.#gets.delete(id));
    }
    return p;
  }

  /** Each value through `get` (remembered like its gets). */
  getMany<const R extends ReadonlyArray<RecordRef<unknown>>>(refs: R): Promise<RecordValues<R>> {
    return getEach(this, refs);
  }

  range<V>(ks: Keyspace<V>, opts?: RangeOptions): Promise<Array<Entry<V>>> {
    return this.inner.range(ks, opts);
  }
}
