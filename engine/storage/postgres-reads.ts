/**
 * The read statements of the PostgreSQL metadata store (engine/storage/postgres-metadata.ts),
 * on any connection: in a transaction or on the pool. Every read is one statement; `getMany` is
 * one statement for any number of keys; on the pool, the read cache's misses that arrive while
 * others are on their way share statements (`CoalescedReads`, statement-batch.ts).
 *
 * Every key lookup is an index probe of the primary key `(keyspace, key)`, never a scan of the
 * table: under SERIALIZABLE, PostgreSQL's predicate locks follow the plan, and a sequential scan
 * would lock the whole relation, making every concurrent writer conflict with the reader. The
 * multi-key read therefore looks each key up in a correlated subquery (one probe per key)
 * rather than joining the key list to the table, which the planner may answer with a scan. The
 * read of a record with the record it names (`getWithNamed`) likewise looks the named key up
 * in a correlated subquery on the first record's field: two probes, one statement.
 */
import type pg from 'pg';
import { checkKey, resolveRange, type Entry, type Keyspace, type RangeOptions, type RecordRef, type StringField, type WithNamed } from './metadata.js';
import { ReadCache } from './read-cache.js';
import { StatementBatcher, type StatementBatchOptions } from './statement-batch.js';

/** What reads need of a connection or the pool. */
export type Queryable = Pick<pg.PoolClient, 'query'>;

/** A SELECT over one keyspace's range, with its parameters; null when nothing can match. */
function rangeQuery(ks: Keyspace<unknown>, opts: RangeOptions | undefined): { text: string; values: unknown[] } | null {
  const r = resolveRange(opts);
  if (r.empty) return null;
  const values: unknown[] = [ks.name];
  let text = 'SELECT key, value FROM slipway_kv WHERE keyspace = $1';
  if (r.start !== undefined) { values.push(r.start); text += ` AND key >= $${values.length}`; }
  if (r.end !== undefined) { values.push(r.end); text += ` AND key < $${values.length}`; }
  text += r.reverse ? ' ORDER BY key DESC' : ' ORDER BY key';
  if (r.limit !== undefined) { values.push(r.limit); text += ` LIMIT $${values.length}`; }
  return { text, values };
}

/** The value at `k` (one statement). @throws RangeError for a bad key; the driver's errors. */
export async function getOn<V>(db: Queryable, ks: Keyspace<V>, k: string): Promise<V | undefined> {
  checkKey(ks, k);
  const res = await db.query({ name: 'slipway-get', text: 'SELECT value FROM slipway_kv WHERE keyspace = $1 AND key = $2', values: [ks.name, k] });
  return res.rows.length === 0 ? undefined : (res.rows[0].value as V);
}

/**
 * The JSON text of each record of `refs` (null where absent), in their order, in one statement
 * (the keys must have been checked). Text rather than parsed values: the read cache keeps text,
 * and a transaction remembers what it read as text so that no two of its reads share an object.
 */
export async function getTextsOn(db: Queryable, refs: ReadonlyArray<RecordRef<unknown>>): Promise<Array<string | null>> {
  if (refs.length === 0) return [];
  if (refs.length === 1) return [await getTextOn(db, refs[0]![0], refs[0]![1])];
  const res = await db.query({
    name: 'slipway-get-many',
    text: `SELECT (SELECT value::text FROM slipway_kv WHERE keyspace = u.ks AND key = u.k) AS v
           FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(ks, k, i) ORDER BY u.i`,
    values: [refs.map((r) => r[0].name), refs.map((r) => r[1])],
  });
  return res.rows.map((row: { v: string | null }) => row.v);
}

/** `get` for a cached keyspace: the record's JSON text (null when absent) — what the cache keeps. */
async function getTextOn(db: Queryable, ks: Keyspace<unknown>, k: string): Promise<string | null> {
  const res = await db.query({ name: 'slipway-get-text', text: 'SELECT value::text AS v FROM slipway_kv WHERE keyspace = $1 AND key = $2', values: [ks.name, k] });
  return res.rows.length === 0 ? null : (res.rows[0].v as string);
}

/** `get` through the cache: a hit, or a read whose answer fills the cache (unless invalidated meanwhile). */
export async function cachedGet<V>(reads: CoalescedReads, cache: ReadCache, ks: Keyspace<V>, k: string): Promise<V | undefined> {
  const hit = cache.lookup<V>(ks.name, k);
  if (hit) return hit.value;
  const ticket = cache.beginFill(ks.name, k);
  let text: string | null;
  try {
    text = await reads.text(ks, k);
  } catch (e) {
    cache.abandon();
    throw e;
  }
  cache.fill(ticket, text);
  return text === null ? undefined : (JSON.parse(text) as V);
}

/**
 * `getMany` outside a transaction (keys checked): each key of a cached keyspace that the cache
 * holds from it (`cache` given: the caller passed the read barrier), every other key read in one
 * statement, whose answers fill the cache like `cachedGet`'s.
 */
export async function cachedGetMany(db: Queryable, cache: ReadCache | null, refs: ReadonlyArray<RecordRef<unknown>>): Promise<unknown[]> {
  const out: unknown[] = new Array(refs.length);
  const missed: number[] = [];
  for (let i = 0; i < refs.length; i++) {
    const [ks, k] = refs[i]!;
    const hit = cache && ReadCache.caches(ks.name) ? cache.lookup(ks.name, k) : null;
    if (hit) out[i] = hit.value;
    else missed.push(i);
  }
  if (missed.length === 0) return out;
  const tickets = missed.map((i) => (cache && ReadCache.caches(refs[i]![0].name) ? cache.beginFill(refs[i]![0].name, refs[i]![1]) : null));
  let texts: Array<string | null>;
  try {
    texts = await getTextsOn(db, missed.map((i) => refs[i]!));
  } catch (e) {
    for (const t of tickets) if (t) cache!.abandon();
    throw e;
  }
  missed.forEach((i, n) => {
    const text = texts[n]!;
    if (tickets[n]) cache!.fill(tickets[n]!, text);
    out[i] = text === null ? undefined : JSON.parse(text);
  });
  return out;
}

/** The JSON texts of a record (`v`) and of the record it names (`nv`), null where absent. */
export interface NamedTexts {
  v: string | null;
  nv: string | null;
}

/**
 * The JSON texts of the record `ks`/`k` (`v`) and of the record of `next` whose key is the
 * first one's `field` (`nv`), null where absent, in one statement: the named record is found by a
 * correlated subquery probing the primary key with `value->>field` (see the top of this file).
 */
async function getWithNamedTextsOn(db: Queryable, ks: Keyspace<unknown>, k: string, field: string, next: Keyspace<unknown>): Promise<NamedTexts> {
  const res = await db.query({
    name: 'slipway-get-named',
    text: `SELECT t.value::text AS v,
                  (SELECT n.value::text FROM slipway_kv n WHERE n.keyspace = $3 AND n.key = t.value->>$4) AS nv
           FROM slipway_kv t WHERE t.keyspace = $1 AND t.key = $2`,
    values: [ks.name, k, next.name, field],
  });
  return res.rows.length === 0 ? { v: null, nv: null } : (res.rows[0] as NamedTexts);
}

/**
 * `getWithNamedTextsOn` for each of `keys` (checked) of `ks`, in their order, in one statement
 * (one key: that statement itself, as `getTextsOn` does): each key's record by a correlated
 * subquery on the primary key, then its named record by another on its `field` (the `OFFSET 0`
 * keeps the planner from inlining the first subquery into both places it is used, which would
 * probe it twice).
 */
async function getWithNamedTextsManyOn(db: Queryable, ks: Keyspace<unknown>, keys: string[], field: string, next: Keyspace<unknown>): Promise<NamedTexts[]> {
  if (keys.length === 1) return [await getWithNamedTextsOn(db, ks, keys[0]!, field, next)];
  const res = await db.query({
    name: 'slipway-get-named-many',
    text: `SELECT w.v::text AS v,
                  (SELECT n.value::text FROM slipway_kv n WHERE n.keyspace = $3 AND n.key = w.v->>$4) AS nv
           FROM (SELECT u.i, (SELECT t.value FROM slipway_kv t WHERE t.keyspace = $1 AND t.key = u.k) AS v
                 FROM unnest($2::text[]) WITH ORDINALITY AS u(k, i) OFFSET 0) w
           ORDER BY w.i`,
    values: [ks.name, keys, next.name, field],
  });
  return res.rows as NamedTexts[];
}

/**
 * The pool's reads of the read cache's misses, coalesced (statement-batch.ts): concurrent reads
 * of record texts share one `getTextsOn` statement, and concurrent reads of a record with the
 * record it names, of one shape (keyspace, field, named keyspace), share one statement. A read
 * that finds no statement of its kind waiting is sent alone, as the uncoalesced statement.
 */
export class CoalescedReads {
  readonly #db: Queryable;
  readonly #opts: StatementBatchOptions;
  readonly #texts: StatementBatcher<RecordRef<unknown>, string | null>;
  /** One batcher per shape; the shapes are the code's (a handful), so this stays small. */
  readonly #named = new Map<string, StatementBatcher<string, NamedTexts>>();

  constructor(db: Queryable, opts: StatementBatchOptions = {}) {
    this.#db = db;
    this.#opts = opts;
    this.#texts = new StatementBatcher((refs) => getTextsOn(db, refs), opts);
  }

  /** Since the start: reads of the cache's misses, and the statements that carried them. */
  get stats(): { reads: number; statements: number } {
    let reads = this.#texts.stats.reads, statements = this.#texts.stats.statements;
    for (const b of this.#named.values()) { reads += b.stats.reads; statements += b.stats.statements; }
    return { reads, statements };
  }

  /** The JSON text of `ks`/`k` (checked), null when absent. @throws the driver's errors. */
  text(ks: Keyspace<unknown>, k: string): Promise<string | null> {
    return this.#texts.submit([ks, k]);
  }

  /** `getWithNamedTextsOn` of `ks`/`k` (checked). @throws the driver's errors. */
  named(ks: Keyspace<unknown>, k: string, field: string, next: Keyspace<unknown>): Promise<NamedTexts> {
    const shape = `${ks.name}\0${field}\0${next.name}`;
    let batcher = this.#named.get(shape);
    if (!batcher) {
      const db = this.#db;
      batcher = new StatementBatcher((keys) => getWithNamedTextsManyOn(db, ks, keys, field, next), this.#opts);
      this.#named.set(shape, batcher);
    }
    return batcher.submit(k);
  }
}

/** True when `k` is a key `checkKey` accepts for `ks`. */
function isKey(ks: Keyspace<unknown>, k: unknown): k is string {
  try {
    checkKey(ks, k as string);
    return true;
  } catch {
    return false;
  }
}

/**
 * `getWithNamed` outside a transaction (`k` checked; metadata.ts states the contract), through
 * `cache` when given (the caller passed the read barrier and `ks` is cached): a hit answers the
 * first record alone (the named one is the caller's to read: as today, its own cache first);
 * otherwise one statement reads both, and each answer fills the cache under its fill-race rule —
 * the named record's with a ticket taken before the statement (`ReadCache.beginUnkeyedFill`), as
 * its key is known only from the answer.
 */
export async function cachedGetWithNamed<V, W>(reads: CoalescedReads, cache: ReadCache | null, ks: Keyspace<V>, k: string, field: StringField<V>, next: Keyspace<W>): Promise<WithNamed<V, W>> {
  const hit = cache ? cache.lookup<V>(ks.name, k) : null;
  if (hit) return { value: hit.value };
  const ticket = cache ? cache.beginFill(ks.name, k) : null;
  const nextTicket = cache && ReadCache.caches(next.name) ? cache.beginUnkeyedFill() : null;
  let texts: NamedTexts;
  try {
    texts = await reads.named(ks, k, field, next);
  } catch (e) {
    if (ticket) cache!.abandon();
    if (nextTicket) cache!.abandon();
    throw e;
  }
  if (ticket) cache!.fill(ticket, texts.v);
  const value = texts.v === null ? undefined : (JSON.parse(texts.v) as V);
  const nextKey = value === undefined ? undefined : (value as Record<string, unknown>)[field];
  if (!isKey(next, nextKey)) {
    if (nextTicket) cache!.abandon();
    return { value };
  }
  if (nextTicket) cache!.fillKeyed(nextTicket, next.name, nextKey, texts.nv);
  return { value, named: { value: texts.nv === null ? undefined : (JSON.parse(texts.nv) as W) } };
}

/** The entries of a range (one statement). */
export async function rangeOn<V>(db: Queryable, ks: Keyspace<V>, opts: RangeOptions | undefined): Promise<Array<Entry<V>>> {
  const q = rangeQuery(ks, opts);
  if (!q) return [];
  const res = await db.query(q);
  return res.rows.map((row: { key: string; value: V }) => ({ key: row.key, value: row.value }));
}
