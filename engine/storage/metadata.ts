/**
 * The metadata contract: everything the domains (auth, oauth, platform, registry, blobs) need
 * from a metadata store, and nothing more. LMDB implements it for the embedded default
 * (engine/storage/lmdb-metadata.ts); a networked database (PostgreSQL, for clusters) implements
 * the same interface. One contract test suite runs against every implementation.
 *
 * ## Model
 * - **Keyspaces.** Records live in named keyspaces (`Keyspace<V>`), each declared by the one
 *   domain that owns it (`keyspace('registry', 'tags')`). A domain reads and writes only its own
 *   keyspaces; another domain asks the owner's service. Keys are strings ordered by their UTF-8
 *   bytes (LMDB's order, and PostgreSQL's with `COLLATE "C"`); multi-part keys are joined with
 *   `key(...parts)`.
 * - **Values** are plain data: objects, arrays, strings, finite numbers, booleans and null
 *   (no `undefined` inside arrays, no Dates, no class instances, no binary, no bigint, no Map
 *   or Set; strings without NUL or unpaired surrogates, which PostgreSQL's jsonb cannot hold).
 *   An object property whose value is `undefined` counts as absent. `put` checks this
 *   (`checkValue`) on every implementation, so a record that one backend could not store is
 *   refused by all of them. Binary content is stored as text (a manifest's UTF-8, or base64).
 *   Every implementation returns a value equal to what was written (field order may differ).
 * - **Size limits**: a key is at most `MAX_KEY_BYTES` bytes of UTF-8 (LMDB's limit is 511 with
 *   its defaults; identifiers are checked against their own, smaller limits before any store
 *   access); a value at most `MAX_VALUE_BYTES` once encoded.
 *
 * ## Reads outside a transaction
 * `get`, `getMany` and `range` read the latest committed state. Each `get` and `range` is atomic
 * on its own (a `range` is one consistent snapshot), but two calls may see different states, and
 * so may the keys of one `getMany` (its round trip is one, its snapshot not necessarily). Request paths that only
 * read (manifest GET, token checks) use these: one read, one round trip.
 *
 * An embedded store also offers `getNow`, the same read returned synchronously; hot paths read
 * through `readMaybe`, which uses it when present and falls back to `get` (see `getNow`).
 * A networked store may offer `getWithNamed`: a record and the record one of its fields names,
 * in one round trip (a manifest GET by tag); callers read through `readWithNamed`.
 *
 * ## Transactions: serializable, retried by the contract
 * `transact(body)` runs `body` against a transaction and commits what it wrote atomically, all or
 * nothing. The isolation is **serializable**: the outcome equals running the committed
 * transactions one at a time in some order, and every read inside `body` (gets, ranges, and the
 * absence of keys) still holds at the commit. When another commit changed what `body` read, the
 * implementation throws the attempt away and runs `body` again, up to `maxAttempts` times (then
 * `TransactionConflictError`). So `body` must be a pure function of what it reads: no I/O other
 * than through `tx`, no side effects it cannot repeat, no reads of mutable outside state it
 * expects to be stable. Return the outcome and act on it after `transact` resolves.
 *
 * Why serializable: the online GC's safety argument (engine/registry/gc.ts) is that a GC batch
 * and a manifest PUT each re-check, inside their transaction, what the other one changes (the
 * blob's record, refs and links) — each must see the other's commit or run before it. Weaker
 * isolation (snapshot isolation's write skew) would let both commit on stale reads: GC deleting
 * a blob that a concurrent manifest just referenced. The same holds for single-use authorization
 * codes, refresh-token rotation and second-factor steps: read-then-write on one key must not
 * interleave.
 *
 * A transaction never holds a database lock or an open database transaction while waiting on
 * a network client: callers stream request bodies and blob bytes *before* calling `transact`,
 * and `body` does only store operations. Implementations may run `body` while holding no lock at
 * all (optimistic: LMDB validates reads at commit) or inside a database transaction
 * (PostgreSQL SERIALIZABLE), but either way `body`'s run time is bounded by store operations.
 *
 * Writes are durable when `transact` resolves: a crash after that never loses them; a crash
 * before leaves none of them.
 */

import { SlipwayError } from '../errors.js';
import { andThen, type MaybePromise } from '../maybe-sync.js';

/** The domains that own keyspaces. */
export type Domain = 'meta' | 'identity' | 'oauth' | 'platform' | 'registry' | 'blobs' | 'webhooks';

/**
 * A named keyspace holding values of type `V`, owned by one domain.
 * Declare with `keyspace()` in the owning domain's records module.
 */
export interface Keyspace<V> {
  readonly owner: Domain;
  /** Unique across all domains; `[a-z0-9-]+`. */
  readonly name: string;
  /** Type-only marker of the value type; never set. */
  readonly __value?: V;
}

/** Every keyspace declared with `keyspace()` in this process, by name. */
const declared = new Map<string, Keyspace<unknown>>();

/**
 * Declares a keyspace of domain `owner`. Declared keyspaces are known to every store opened
 * later in the process (`declaredKeyspaces`), so a store can open them all at start.
 * @throws Error on a name outside `[a-z0-9-]{1,48}`.
 */
export function keyspace<V>(owner: Domain, name: string): Keyspace<V> {
  const ks = named<V>(owner, name);
  if (!declared.has(name)) declared.set(name, ks);
  return ks;
}

/** A keyspace value, not declared. @throws Error on a name outside `[a-z0-9-]{1,48}`. */
function named<V>(owner: Domain, name: string): Keyspace<V> {
  if (!/^[a-z0-9-]{1,48}$/.test(name)) throw new Error(`invalid keyspace name ${JSON.stringify(name)}`);
  return Object.freeze({ owner, name });
}

/**
 * The keyspaces declared so far in this process (by the domains' records modules, which load
 * before any store opens), in declaration order. The embedded store opens each at start: lmdb-js
 * opens a named database with a synchronous write transaction on the calling thread, which on
 * the request path would put a disk write on the event loop (docs/faults.md).
 */
export function declaredKeyspaces(): Array<Keyspace<unknown>> {
  return [...declared.values()];
}

/**
 * A keyspace named `name` whose records the caller treats as opaque values: only for
 * whole-store tools that copy or compare every keyspace of a store (`slipway migrate`), never
 * for reading a domain's records (domains declare theirs with `keyspace`).
 */
export function storedKeyspace(name: string): Keyspace<unknown> {
  // Not declared: a name read from a store is not one of this build's keyspaces to open at start.
  return named<unknown>('meta', name);
}

/** Longest key in UTF-8 bytes every implementation accepts. */
export const MAX_KEY_BYTES = 480;
/** Largest encoded value every implementation accepts (bytes). */
export const MAX_VALUE_BYTES = 8 * 1024 * 1024;

/** Separator of multi-part keys (U+001F): no identifier may contain it. */
export const KEY_SEPARATOR = '\x1f';

/** Joins key parts with the separator (two parts, the hot reads' case, without building an array). */
export function key(...parts: string[]): string {
  // `?? ''` as join treats a missing part (null/undefined from an untyped caller)
  return parts.length === 2 ? (parts[0] ?? '') + KEY_SEPARATOR + (parts[1] ?? '') : parts.join(KEY_SEPARATOR);
}

/** Splits a multi-part key into its parts. */
export function keyParts(k: string): string[] {
  return k.split(KEY_SEPARATOR);
}

/** One record of a keyspace. */
export interface Entry<V> {
  key: string;
  value: V;
}

/**
 * Which keys a range read returns, in key order (reversed with `reverse`).
 * `prefix` selects the keys that start with `prefix` + separator (one repository's tags, one
 * app's releases); `start` is inclusive and `end` exclusive; all may be combined (a prefix
 * narrows start and end). `limit` bounds the number of entries (default: all; callers of
 * unbounded keyspaces page with `start` after the last key seen).
 */
export interface RangeOptions {
  prefix?: string;
  start?: string;
  end?: string;
  limit?: number;
  reverse?: boolean;
}

/** The address of one record for `getMany`: its keyspace and key. */
export type RecordRef<V> = readonly [ks: Keyspace<V>, key: string];

/** What `getMany` returns for `refs`: position by position, each record's value or undefined. */
export type RecordValues<R extends ReadonlyArray<RecordRef<unknown>>> = {
  -readonly [I in keyof R]: R[I] extends RecordRef<infer V> ? V | undefined : never;
};

/** Reading operations, in and outside transactions. */
export interface MetadataReader {
  /** The value at `k`, or undefined. */
  get<V>(ks: Keyspace<V>, k: string): Promise<V | undefined>;
  /**
   * The values at several keys, of one keyspace or several, in the order of `refs` (undefined
   * where absent; a key may appear twice): for each, what `get` would return, read with one
   * round trip on a networked store (PostgreSQL: one statement for the keys its cache does not
   * answer) instead of one per key. Outside a transaction, like separate gets, the answers need
   * not come from one snapshot; inside, they are reads of the transaction like its gets (they
   * see its own writes and count for its serializability), and on PostgreSQL the transaction's
   * later `get`s of the same keys are answered from what it read, without a round trip: a body
   * that knows its keys up front reads them all with one `getMany`, then uses the helpers that
   * `get` them one by one (`prefetch` below does that only where it saves round trips).
   * @throws RangeError (rejected) for a bad key (see `checkKey`).
   */
  getMany<const R extends ReadonlyArray<RecordRef<unknown>>>(refs: R): Promise<RecordValues<R>>;
  /**
   * Optional fast path: the same answer as `get` (the same state, the same errors, thrown
   * instead of rejected), returned synchronously. Only a store whose reads are local and
   * synchronous implements it (LMDB, in and outside transactions; inside, the read counts for
   * validation exactly like `get`'s); networked stores (PostgreSQL) leave it out. Callers never
   * require it: they read through `readMaybe` below, which falls back to `get`, and write the
   * rest over `MaybePromise` (engine/maybe-sync.ts), so one code path serves both kinds of store
   * and a request whose data is local completes without any promise. Its value may be shared
   * with other readers (LMDB keeps decoded hot records until the next commit, frozen:
   * lmdb-read-memo.ts): callers never modify what `getNow` returns.
   * @throws RangeError for a bad key (see `checkKey`)
   */
  getNow?<V>(ks: Keyspace<V>, k: string): V | undefined;
  /** The entries selected by `opts`, in key order (see RangeOptions). */
  range<V>(ks: Keyspace<V>, opts?: RangeOptions): Promise<Array<Entry<V>>>;
  /**
   * Optional fast path outside transactions for a read whose second key is a field of the first
   * record (a manifest GET by tag: the tag, then the manifest its `digest` names): the record at
   * `k` — what `get` returns — and, when the store can read it in the same round trip, the record
   * of `next` whose key is the string `value[field]` (`named`, what `get(next, value[field])`
   * returns). `named` is left out when the first record is absent, its field is not a valid key
   * (see `checkKey`), or reading both together would save no round trip (PostgreSQL: the first
   * came from its read cache); callers then read the named record themselves, as without this
   * method. Like two gets outside a transaction, the two answers need not come from one
   * snapshot (on PostgreSQL they do: one statement). A networked store implements it (PostgreSQL:
   * one statement); an embedded one leaves it out (two local reads cost no round trip, and stay
   * synchronous through `getNow`). Callers read through `readWithNamed` below.
   * @throws RangeError (rejected) for a bad `k`.
   */
  getWithNamed?<V, W>(ks: Keyspace<V>, k: string, field: StringField<V>, next: Keyspace<W>): Promise<WithNamed<V, W>>;
}

/** The names of the properties of `V` whose values are strings (`getWithNamed`'s `field`). */
export type StringField<V> = { [F in keyof V]-?: V[F] extends string ? F : never }[keyof V] & string;

/** What `getWithNamed` returns: the record read, and the record it names when that was read with it. */
export interface WithNamed<V, W> {
  /** The record at the key asked for, or undefined. */
  value: V | undefined;
  /** The record named by `value`'s field (its value undefined when absent); left out when not read. */
  named?: { value: W | undefined };
}

/**
 * The value at `k`: at once when `reader` has the synchronous fast path (`getNow`), else a
 * Promise from `get`. A bad key throws on the fast path and rejects otherwise (RangeError).
 */
export function readMaybe<V>(reader: MetadataReader, ks: Keyspace<V>, k: string): MaybePromise<V | undefined> {
  return reader.getNow ? reader.getNow(ks, k) : reader.get(ks, k);
}

/**
 * The record at `k` and, where the store reads it in the same round trip, the record of `next`
 * named by its string `field` (`getWithNamed`); on a store without that method, only the first
 * record (`readMaybe`: synchronous on the embedded store), and the caller reads the named one as
 * it would have. A bad `k` throws on the fast path and rejects otherwise (RangeError).
 */
export function readWithNamed<V, W>(reader: MetadataReader, ks: Keyspace<V>, k: string, field: StringField<V>, next: Keyspace<W>): MaybePromise<WithNamed<V, W>> {
  return reader.getWithNamed ? reader.getWithNamed(ks, k, field, next) : andThen(readMaybe(reader, ks, k), (value) => ({ value }));
}

/**
 * `getMany` through `get`, one key after another (a reader whose gets cost no round trip:
 * LMDB, wrappers of another reader).
 */
export async function getEach<R extends ReadonlyArray<RecordRef<unknown>>>(reader: Pick<MetadataReader, 'get'>, refs: R): Promise<RecordValues<R>> {
  for (const [ks, k] of refs) checkKey(ks, k);
  const out: unknown[] = [];
  for (const [ks, k] of refs) out.push(await reader.get(ks, k));
  return out as RecordValues<R>;
}

/**
 * Reads `refs` ahead, in one `getMany`, when that saves round trips: on a reader without the
 * synchronous fast path (PostgreSQL, whose transaction then answers later `get`s of these keys
 * from what it read); a reader with `getNow` reads locally, where reading ahead would only read
 * every key twice, so nothing is done. Inside a transaction, call it before the helpers that
 * `get` the same keys one by one.
 */
export async function prefetch(reader: MetadataReader, refs: ReadonlyArray<RecordRef<unknown>>): Promise<void> {
  if (!reader.getNow) await reader.getMany(refs);
}

/** A transaction: reads see the transaction's own writes; writes commit together. */
export interface MetadataTransaction extends MetadataReader {
  /** Sets `k` to `value` (creates or replaces). */
  put<V>(ks: Keyspace<V>, k: string, value: V): void;
  /** Removes `k` (no-op when absent). */
  remove<V>(ks: Keyspace<V>, k: string): void;
}

/** Options of one `transact` call. */
export interface TransactOptions {
  /** Attempts before giving up with TransactionConflictError (default 16). */
  maxAttempts?: number;
}

/** The contract every metadata backend implements (see the top of this file). */
export interface MetadataStore extends MetadataReader {
  /** Implementation name for logs and readiness (`lmdb`, `postgres`). */
  readonly kind: string;
  /**
   * Runs `body` in a serializable transaction and commits its writes atomically and durably,
   * retrying `body` on conflicts.
   * @returns what `body` returned on the attempt that committed.
   * @throws TransactionConflictError after `maxAttempts` conflicting attempts; whatever `body`
   *         throws (nothing is written then); StoreUnavailableError when the backend cannot be
   *         reached (networked implementations).
   */
  transact<T>(body: (tx: MetadataTransaction) => Promise<T> | T, opts?: TransactOptions): Promise<T>;
  /**
   * Runs `fn` only while this process holds the exclusive lock `name` across every node that
   * shares the store: background jobs that must run on one node at a time (GC, the upload
   * reaper), and start-up steps that must run once (schema migrations, the first account).
   * Without `wait`, returns `{ ran: false }` at once when another holder has the lock; with
   * `wait`, waits for it (polling; for start-up steps).
   *
   * LMDB: one process owns the environment, so the lock is in-process. PostgreSQL: a
   * session-level advisory lock (`pg_try_advisory_lock`) on a connection of its own, held while
   * `fn` runs and released when it settles — or when that connection dies, which a database
   * restart or a network cut can do while `fn` still runs: `signal` then aborts, and `fn` must
   * stop at its next step (another node may take the lock). Whatever `fn` does must therefore be
   * safe against a second holder for the moments between the lock's loss and `fn` noticing:
   * GC and the reaper are (their deletions re-check in serializable transactions).
   * @param name `[a-z0-9-]+`, one per job.
   * @throws StoreUnavailableError when the lock cannot be asked for; whatever `fn` throws.
   */
  exclusive<T>(name: string, fn: (signal: AbortSignal) => Promise<T>, opts?: ExclusiveOptions): Promise<ExclusiveOutcome<T>>;
  /** Closes the store; pending transactions finish first. */
  close(): Promise<void>;
  /** The node-local read cache, on a store that has one and uses it (PostgreSQL); for metrics. */
  readonly readCache?: ReadCacheProbe | undefined;
}

/**
 * What a node-local read cache of a networked store shows an operator (PostgreSQL:
 * engine/storage/read-cache.ts and postgres-invalidation.ts, which implements this).
 */
export interface ReadCacheProbe {
  /** True while the cache may be used (its invalidation listener confirmed). */
  readonly usable: boolean;
  /**
   * Entries held; their JSON text, bytes (UTF-16 code units × 2); and since the start: lookups
   * answered from it, lookups that missed, fills refused because they raced an invalidation.
   */
  readonly cache: { readonly size: number; readonly bytes: number; readonly stats: { readonly hits: number; readonly misses: number; readonly refused: number } };
  /** Told of each read barrier as it ends: seconds its caller waited, and whether the cache may be used. */
  onSync: ((seconds: number, usable: boolean) => void) | undefined;
  /** Round trips of the read barrier since the start (each serves every request waiting for it). */
  readonly barrierRoundTrips: number;
  /**
   * Since the start: reads of records the cache did not hold (or could not use) sent to the
   * database, and the statements that carried them (fewer under load: they are coalesced).
   */
  readonly missReads: { readonly reads: number; readonly statements: number };
}

/** Options of `exclusive`. */
export interface ExclusiveOptions {
  /** Wait for the lock instead of giving up when it is held (default false). */
  wait?: boolean;
}

/** What `exclusive` did: ran `fn` (with its result) or not (another holder had the lock). */
export type ExclusiveOutcome<T> = { ran: true; value: T } | { ran: false };

/**
 * Runs `fn` once this process holds the exclusive lock `name`, waiting for it as long as another
 * holder keeps it (start-up steps that must run once across nodes starting together).
 * @returns what `fn` returned. @throws what `exclusive` throws.
 */
export async function runWhenExclusive<T>(store: MetadataStore, name: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const outcome = await store.exclusive(name, fn, { wait: true });
  if (!outcome.ran) throw new Error(`exclusive lock ${name}: a waiting call returned without running`);
  return outcome.value;
}

/** Checks an exclusive-lock name. @throws RangeError. */
export function checkLockName(name: string): void {
  if (!/^[a-z0-9-]{1,64}$/.test(name)) throw new RangeError(`invalid lock name ${JSON.stringify(name)}`);
}

/** Seconds a client is told to wait before retrying a request refused with StoreUnavailableError. */
export const STORE_RETRY_AFTER_SECONDS = 2;

/**
 * A transaction kept conflicting with concurrent commits through every attempt (a hot record
 * under many writers, e.g. a shared layer's reference count while GC runs). Nothing was
 * written; the request may simply be sent again, so every host answers it like an unreachable
 * store: a SlipwayError of code STORE_UNAVAILABLE (503 with Retry-After), never a 500.
 */
export class TransactionConflictError extends SlipwayError {
  constructor(readonly attempts: number) {
    // The name stays 'SlipwayError': the hosts recognise their errors by it (isSlipwayError).
    super('STORE_UNAVAILABLE', `transaction conflicted with concurrent changes ${attempts} times; retry shortly`, { retryAfter: 1 });
  }
}

/**
 * The metadata backend cannot be reached, or did not answer within its timeouts (networked
 * backends). A SlipwayError of code STORE_UNAVAILABLE, so every host answers it with its own
 * 503 (engine/errors.ts): the message and detail are safe for clients and name no host, port or
 * driver detail; `reason` (the driver's message) is for logs and readiness.
 */
export class StoreUnavailableError extends SlipwayError {
  constructor(readonly reason: string, readonly cause?: unknown) {
    super('STORE_UNAVAILABLE', 'the metadata database is unavailable; retry shortly', { retryAfter: STORE_RETRY_AFTER_SECONDS });
  }
}

/** UTF-8 byte order of two strings: the key order of every implementation. */
export function compareUtf8(a: string, b: string): number {
  return a === b ? 0 : Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * Resolves RangeOptions into an inclusive start, exclusive end and the rest, in UTF-8 key
 * order; `empty` when nothing can match (limit 0, or start at or past end). A prefix `p` covers
 * `[p + SEP, p + '\x20')`: every key `p SEP …` and nothing else (the byte after the separator
 * U+001F is U+0020).
 */
export function resolveRange(opts: RangeOptions = {}): { start?: string; end?: string; limit?: number; reverse: boolean; empty: boolean } {
  let { start, end } = opts;
  if (opts.prefix !== undefined) {
    const lo = opts.prefix + KEY_SEPARATOR;
    const hi = opts.prefix + '\x20';
    start = start === undefined || compareUtf8(start, lo) < 0 ? lo : start;
    end = end === undefined || compareUtf8(end, hi) > 0 ? hi : end;
  }
  const empty = opts.limit === 0 || (start !== undefined && end !== undefined && compareUtf8(start, end) >= 0);
  return { start, end, limit: opts.limit, reverse: opts.reverse ?? false, empty };
}

/**
 * Checks a key: non-empty, no NUL (PostgreSQL text cannot hold it), at most MAX_KEY_BYTES of
 * UTF-8. @throws RangeError naming the keyspace.
 */
export function checkKey(ks: Keyspace<unknown>, k: string): void {
  if (typeof k !== 'string' || k.length === 0) throw new RangeError(`empty key in keyspace ${ks.name}`);
  if (k.includes('\0')) throw new RangeError(`key with NUL in keyspace ${ks.name}`);
  if (k.length * 3 > MAX_KEY_BYTES && Buffer.byteLength(k) > MAX_KEY_BYTES) {
    throw new RangeError(`key of ${Buffer.byteLength(k)} bytes in keyspace ${ks.name} exceeds ${MAX_KEY_BYTES} bytes`);
  }
}

/** Deepest nesting `checkValue` accepts (also stops a cyclic value). */
export const MAX_VALUE_DEPTH = 64;

/**
 * Checks that `value` is plain JSON-representable data (see "Values" at the top of this file):
 * null, booleans, finite numbers, strings without NUL or unpaired surrogates, arrays of such
 * values (no holes, no `undefined`) and plain objects (prototype Object.prototype or null) whose
 * properties are such values or `undefined` (absent), nested at most MAX_VALUE_DEPTH deep.
 * @throws TypeError naming the keyspace, key and the path of the first offending part.
 */
export function checkValue(ks: Keyspace<unknown>, k: string, value: unknown): void {
  const bad = offending(value, 0);
  if (bad !== null) {
    throw new TypeError(`value for ${ks.name}/${JSON.stringify(k)} is not JSON-representable: ${bad.what} at ${bad.path || '(root)'}`);
  }
}

/**
 * True when every backend can store `s` inside a value: no NUL (PostgreSQL text and jsonb
 * cannot hold U+0000) and no unpaired surrogate (not Unicode text; jsonb refuses its escape).
 * Request readers check input strings with it so such input is a 400, not a failed write.
 */
export function storableString(s: string): boolean {
  return !s.includes('\0') && (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

function offending(v: unknown, depth: number): { what: string; path: string } | null {
  switch (typeof v) {
    case 'boolean': return null;
    case 'number': return Number.isFinite(v) ? null : { what: String(v), path: '' };
    case 'string': return storableString(v) ? null : { what: 'a string with NUL or an unpaired surrogate', path: '' };
    case 'object': break;
    default: return { what: typeof v, path: '' };
  }
  if (v === null) return null;
  if (depth >= MAX_VALUE_DEPTH) return { what: `nesting deeper than ${MAX_VALUE_DEPTH}`, path: '' };
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (!(i in v) || v[i] === undefined) return { what: 'undefined', path: `[${i}]` };
      const inner = offending(v[i], depth + 1);
      if (inner) return { what: inner.what, path: `[${i}]${inner.path}` };
    }
    return null;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return { what: `a ${proto?.constructor?.name ?? 'class'} instance`, path: '' };
  for (const name in v) {
    if (!storableString(name)) return { what: 'a property name with NUL or an unpaired surrogate', path: '' };
    const p = (v as Record<string, unknown>)[name];
    if (p === undefined) continue;
    const inner = offending(p, depth + 1);
    if (inner) return { what: inner.what, path: `.${name}${inner.path}` };
  }
  return null;
}
