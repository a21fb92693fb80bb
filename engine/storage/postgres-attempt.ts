/**
 * One attempt of a transaction body on the PostgreSQL metadata store
 * (engine/storage/postgres-metadata.ts), on a connection inside `BEGIN ISOLATION LEVEL
 * SERIALIZABLE … COMMIT`: its reads, and its buffered writes applied in one statement.
 *
 * ## Reads remembered for the attempt
 * Every record the attempt reads (by `get` or `getMany`) is remembered, as its JSON text, until
 * the attempt ends; a later `get` of the same key is answered from that, without a round trip.
 * That changes no answer: under SERIALIZABLE, every statement of the transaction reads the one
 * snapshot taken at its first statement, so reading the key again would return the same record
 * — and the transaction's own writes, which do change it, are looked up first. The records read
 * once stay in PostgreSQL's conflict tracking (its predicate locks last until the transaction
 * ends), so serializability is unchanged. Kept as text and parsed per read, so that no two reads
 * share one object that a caller might change.
 */
import type pg from 'pg';
import {
  checkKey, type Entry, type Keyspace, type MetadataTransaction, type RangeOptions, type RecordRef, type RecordValues,
} from './metadata.js';
import { BufferedWrites, REMOVED } from './pending-writes.js';
import { CHANNEL, type Invalidation, type Notice } from './postgres-invalidation.js';
import { getTextsOn, rangeOn } from './postgres-reads.js';

/** The id under which an attempt remembers a record. */
function idOf(ks: Keyspace<unknown>, k: string): string {
  return ks.name + '\0' + k;
}

/** One attempt of a transaction body on a connection inside BEGIN … COMMIT. */
export class Attempt extends BufferedWrites implements MetadataTransaction {
  /** Records read by this attempt: id → JSON text, or null when absent. */
  readonly #read = new Map<string, string | null>();

  constructor(readonly client: pg.PoolClient) {
    super();
  }

  async get<V>(ks: Keyspace<V>, k: string): Promise<V | undefined> {
    return (await this.getMany([[ks, k]] as const))[0];
  }

  /** Own writes first, then records this attempt read before, then one statement for the rest. */
  async getMany<const R extends ReadonlyArray<RecordRef<unknown>>>(refs: R): Promise<RecordValues<R>> {
    for (const [ks, k] of refs) checkKey(ks, k);
    const out: unknown[] = new Array(refs.length);
    const missed: number[] = [];
    for (let i = 0; i < refs.length; i++) {
      const [ks, k] = refs[i]!;
      const pending = this.writes.lookup(ks, k);
      if (pending) { out[i] = pending.value; continue; }
      const text = this.#read.get(idOf(ks, k));
      if (text === undefined) missed.push(i);
      else out[i] = text === null ? undefined : JSON.parse(text);
    }
    if (missed.length > 0) {
      const texts = await getTextsOn(this.client, missed.map((i) => refs[i]!));
      missed.forEach((i, n) => {
        const [ks, k] = refs[i]!;
        const text = texts[n]!;
        this.#read.set(idOf(ks, k), text);
        out[i] = text === null ? undefined : JSON.parse(text);
      });
    }
    return out as RecordValues<R>;
  }

  async range<V>(ks: Keyspace<V>, opts?: RangeOptions): Promise<Array<Entry<V>>> {
    const committed = await rangeOn(this.client, ks, this.writes.rangeLimitFor(ks, opts));
    return this.writes.overlay(ks, committed, opts);
  }

  /**
   * Applies the buffered writes in one statement: the upsert, the delete, and the cache
   * invalidation notice (engine/storage/postgres-invalidation.ts) when the transaction wrote a
   * cached keyspace. Returns that notice, or null.
   */
  async apply(inv: Invalidation): Promise<Notice | null> {
    const put: [string[], string[], string[]] = [[], [], []];
    const del: [string[], string[]] = [[], []];
    const written: Array<readonly [string, string]> = [];
    for (const { ks, entries } of this.writes.byKeyspace.values()) {
      for (const [k, v] of entries) {
        written.push([ks.name, k]);
        if (v === REMOVED) { del[0].push(ks.name); del[1].push(k); }
        else { put[0].push(ks.name); put[1].push(k); put[2].push(JSON.stringify(v)); }
      }
    }
    if (written.length === 0) return null;
    const notice = inv.noticeFor(written);
    await this.client.query(applyStatement(put, del, notice));
    return notice;
  }
}

/**
 * The writes of one transaction as one statement: the upsert, the delete and the notification,
 * each only when there is one (data-modifying CTEs run whether or not the outer query reads them;
 * a key is never both put and deleted by one transaction). A part is left out rather than run
 * empty: under SERIALIZABLE, a delete planned as a scan of the table would take a predicate lock
 * on all of it and make every concurrent writer conflict.
 */
function applyStatement(put: [string[], string[], string[]], del: [string[], string[]], notice: Notice | null): { name: string; text: string; values: unknown[] } {
  const ctes: string[] = [];
  const values: unknown[] = [];
  let name = 'slipway-apply-';
  if (put[0].length > 0) {
    values.push(...put);
    ctes.push(`put AS (INSERT INTO slipway_kv (keyspace, key, value)
      SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])
      ON CONFLICT (keyspace, key) DO UPDATE SET value = excluded.value)`);
    name += 'p';
  }
  if (del[0].length > 0) {
    const n = values.length;
    values.push(...del);
    ctes.push(`del AS (DELETE FROM slipway_kv WHERE (keyspace, key) IN (SELECT * FROM unnest($${n + 1}::text[], $${n + 2}::text[])))`);
    name += 'd';
  }
  let tail = 'SELECT 1';
  if (notice) {
    values.push(CHANNEL, notice.payload);
    tail = `SELECT pg_notify($${values.length - 1}, $${values.length})`;
    name += 'n';
  }
  return { name, text: `WITH ${ctes.join(', ')} ${tail}`, values };
}
