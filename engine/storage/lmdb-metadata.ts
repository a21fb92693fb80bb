/**
 * The metadata contract (engine/storage/metadata.ts) on one LMDB environment: the embedded
 * default. Each keyspace is an LMDB named database of the same name, msgpack-encoded with shared
 * record structures, so the keyspaces are the databases `engine/store.ts` has always opened.
 *
 * Transactions are optimistic. `body` runs with no lock held: its reads go to the latest
 * committed state and are remembered as the bytes they returned (a range remembers every key
 * and value it returned); its writes are buffered. The commit is one LMDB write transaction
 * (LMDB runs write transactions one at a time) that first re-reads everything `body` read and
 * compares bytes: if anything changed, nothing is written and `body` runs again; otherwise the
 * buffered writes are applied and committed. Validation and writes happen under LMDB's single
 * writer, so committed transactions are serializable in commit order. A transaction that wrote
 * nothing is validated in one synchronous pass over a single read snapshot instead (no commit).
 *
 * LMDB reads are synchronous, so the store and its transactions offer the contract's `getNow`
 * fast path (`get` is a fresh read wrapped in a Promise). The store's own `getNow` (outside
 * transactions) answers the hot keyspaces from decoded records kept until the next commit by any
 * process (lmdb-read-memo.ts): every commit also writes a new generation for that purpose.
 *
 * Durability: the environment is opened with `overlappingSync: false` by its owner, so the
 * commit's promise resolves only once the transaction is on disk. A commit that fails for want
 * of space (ENOSPC, EDQUOT, MDB_MAP_FULL) writes nothing and throws STORAGE_FULL
 * (storage-full.ts).
 */
import { dataDisk, isStalled } from './disk-deadline.js';
import type { Database, RootDatabase } from 'lmdb';
import {
  checkKey, checkLockName, resolveRange, TransactionConflictError,
  declaredKeyspaces, type Entry, type ExclusiveOptions, type ExclusiveOutcome, type Keyspace, type MetadataStore, type MetadataTransaction,
  type RangeOptions, type RecordRef, type RecordValues, type TransactOptions,
} from './metadata.js';
import { BufferedWrites, REMOVED } from './pending-writes.js';
import { asStorageFull } from './storage-full.js';
import { ContentionGate } from './contention-gate.js';
import { GENERATION_DB, LmdbReadMemo, type MemoEntries } from './lmdb-read-memo.js';
import { prewarmDatabases, type PrewarmResult } from './lmdb-prewarm.js';
import { CACHED_KEYSPACES } from './read-cache.js';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Process ids holding a POSIX lock on `file`, from Linux's `/proc/locks` (lines like
 * `1: POSIX  ADVISORY  READ 11858 fe:00:2148513 0 0`: pid, then device major:minor (hex) and
 * inode). Empty where `/proc/locks` does not exist.
 */
function lockHolders(file: string): number[] {
  let text: string;
  let st: { dev: number; ino: number };
  try {
    text = readFileSync('/proc/locks', 'utf8');
    st = statSync(file);
  } catch {
    return [];
  }
  const major = (st.dev >> 8) & 0xfff, minor = (st.dev & 0xff) | ((st.dev >> 12) & 0xfff00);
  const out: number[] = [];
  for (const line of text.split('\n')) {
    const m = /^\d+:\s+POSIX\s+\S+\s+\S+\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    if (m && Number(m[4]) === st.ino && parseInt(m[2]!, 16) === major && parseInt(m[3]!, 16) === minor) out.push(Number(m[1]));
  }
  return out;
}

interface Handles {
  /** Decoded view (msgpack with shared structures). */
  db: Database<unknown, string>;
  /** The same database's raw bytes, for read validation. */
  raw: Database<Buffer, string>;
  /** Records kept between `getNow` reads (lmdb-read-memo.ts); undefined for keyspaces not kept. */
  memo: MemoEntries | undefined;
}

type RangeArgs = { start?: string; end?: string; limit?: number; reverse?: boolean };

/** Translates a contract range into lmdb-js's getRange arguments (reverse: start inclusive-high). */
function scan<V>(db: Database<V, string>, opts: RangeOptions | undefined): Array<Entry<V>> {
  const r = resolveRange(opts);
  if (r.empty) return [];
  if (!r.reverse) {
    const args: RangeArgs = {};
    if (r.start !== undefined) args.start = r.start;
    if (r.end !== undefined) args.end = r.end;
    if (r.limit !== undefined) args.limit = r.limit;
    return [...db.getRange(args)].map(({ key, value }) => ({ key, value }));
  }
  // lmdb-js reverse ranges include `start` (the high end) and exclude `end` (the low end);
  // the contract's range is [start, end): drop the high key, add the low key back.
  const args: RangeArgs = { reverse: true };
  if (r.end !== undefined) args.start = r.end;
  if (r.start !== undefined) args.end = r.start;
  if (r.limit !== undefined) args.limit = r.limit + 1;
  const out: Array<Entry<V>> = [];
  for (const { key, value } of db.getRange(args)) {
    if (key === r.end) continue;
    if (r.limit !== undefined && out.length === r.limit) break;
    out.push({ key, value });
  }
  if (r.start !== undefined && (r.limit === undefined || out.length < r.limit)) {
    const low = db.get(r.start);
    if (low !== undefined) out.push({ key: r.start, value: low });
  }
  return out;
}

interface ReadRecord { h: Handles; k: string; bytes: Buffer | undefined }
interface RangeRecord { h: Handles; opts: RangeOptions | undefined; seen: Array<Entry<Buffer>> }

/** One attempt of a transaction body: remembers reads, buffers writes. */
class Attempt extends BufferedWrites implements MetadataTransaction {
  readonly reads: ReadRecord[] = [];
  readonly ranges: RangeRecord[] = [];

  constructor(readonly store: LmdbMetadataStore) {
    super();
  }

  get<V>(ks: Keyspace<V>, k: string): Promise<V | undefined> {
    return later(() => this.getNow(ks, k));
  }

  /** `get`'s answer at once: own writes first, else a committed read remembered for validation. */
  getNow<V>(ks: Keyspace<V>, k: string): V | undefined {
    checkKey(ks, k);
    const pending = this.writes.lookup(ks, k);
    if (pending) return pending.value;
    const h = this.store.handles(ks);
    const bytes = h.raw.getBinary(k);
    this.reads.push({ h, k, bytes });
    return bytes === undefined ? undefined : (decode(h, bytes) as V);
  }

  getMany<const R extends ReadonlyArray<RecordRef<unknown>>>(refs: R): Promise<RecordValues<R>> {
    return later(() => refs.map(([ks, k]) => this.getNow(ks, k)) as RecordValues<R>);
  }

  range<V>(ks: Keyspace<V>, opts?: RangeOptions): Promise<Array<Entry<V>>> {
    const h = this.store.handles(ks);
    const readOpts = this.writes.rangeLimitFor(ks, opts);
    const seen = scan(h.raw, readOpts);
    this.ranges.push({ h, opts: readOpts, seen });
    const committed = seen.map(({ key, value }) => ({ key, value: decode(h, value) as V }));
    return Promise.resolve(this.writes.overlay(ks, committed, opts));
  }

  /** True when every read still returns the same bytes (call within one snapshot). */
  valid(): boolean {
    for (const r of this.reads) {
      if (!sameBytes(r.h.raw.getBinary(r.k), r.bytes)) return false;
    }
    for (const r of this.ranges) {
      const now = scan(r.h.raw, r.opts);
      if (now.length !== r.seen.length) return false;
      for (let i = 0; i < now.length; i++) {
        if (now[i]!.key !== r.seen[i]!.key || !sameBytes(now[i]!.value, r.seen[i]!.value)) return false;
      }
    }
    return true;
  }

  /** Applies the buffered writes (inside the LMDB write transaction). */
  apply(): void {
    for (const { ks, entries } of this.writes.byKeyspace.values()) {
      const { db } = this.store.handles(ks);
      for (const [k, v] of entries) {
        if (v === REMOVED) db.remove(k);
        else db.put(k, v);
      }
    }
  }
}

/** `f`'s value as a Promise; its throw as a rejection (the contract's async reads never throw). */
function later<T>(f: () => T): Promise<T> {
  try {
    return Promise.resolve(f());
  } catch (e) {
    return Promise.reject(e);
  }
}

function decode(h: Handles, bytes: Buffer): unknown {
  return (h.db as unknown as { encoder: { decode(b: Buffer): unknown } }).encoder.decode(bytes);
}

function sameBytes(a: Buffer | undefined, b: Buffer | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.equals(b);
}

/**
 * Why an lmdb-js commit failed: lmdb-js rejects the transaction with "Commit failed" and puts
 * the write thread's error (ENOSPC from a page write, MDB_MAP_FULL) in `commitError`, a
 * promise it rejects in the same turn. Unhandled, that promise's rejection would end the
 * process; handled here, its reason is the cause.
 */
async function commitCause(e: unknown): Promise<unknown> {
  const pending = (e as { commitError?: unknown } | null)?.commitError;
  if (!(pending instanceof Promise)) return e;
  try {
    await pending;
    return e;
  } catch (cause) {
    return cause;
  }
}

let guarded = false;

/**
 * True for the rejection lmdb-js leaves unhandled when a commit fails (lmdb 3.5: one promise per
 * failed transaction that no caller holds, "Commit failed (see commitError for details)", with a
 * `commitError` promise): the transaction's own caller already got the error (STORAGE_FULL), so
 * such a rejection is no reason to end the process. A process-level `unhandledRejection` policy
 * (server/cli.ts `serve`) must let these pass.
 */
export function isOrphanCommitFailure(reason: unknown): boolean {
  return reason instanceof Error && (reason as { commitError?: unknown }).commitError instanceof Promise;
}

/**
 * Drops lmdb-js's orphan commit-failure rejections (`isOrphanCommitFailure`), which would end the
 * process as unhandled rejections; any other unhandled rejection is thrown on as before.
 */
function guardCommitFailures(): void {
  if (guarded) return;
  guarded = true;
  process.on('unhandledRejection', (reason) => {
    if (isOrphanCommitFailure(reason)) return;
    throw reason;
  });
}

/** The LMDB implementation of the metadata contract over an open environment. */
export class LmdbMetadataStore implements MetadataStore {
  readonly kind = 'lmdb';
  readonly #handles = new Map<string, Handles>();
  /** Exclusive locks held in this process: name → settles when released. */
  readonly #held = new Map<string, Promise<void>>();
  readonly #memo: LmdbReadMemo;
  /** Queues transactions that conflicted (contention-gate.ts). */
  readonly #gate = new ContentionGate();
  #closed = false;

  /** @param env an environment opened with msgpack encoding and `overlappingSync: false`. */
  constructor(readonly env: RootDatabase) {
    guardCommitFailures();
    this.#memo = new LmdbReadMemo(env);
    // Every declared keyspace now, not at first use: lmdb-js opens a named database with a
    // synchronous write transaction on the event loop, which waits for any commit in flight and
    // writes to the disk itself. At first use on the request path, a disk that hangs then stops
    // the whole process, and no deadline can fire (docs/faults.md "A data disk that hangs").
    // One write transaction for all of them (each open is a child of it): one commit at start.
    env.transactionSync(() => { for (const ks of declaredKeyspaces()) this.handles(ks); });
  }

  /** The decoded and raw handles of a keyspace's database (opened once). */
  handles(ks: Keyspace<unknown>): Handles {
    let h = this.#handles.get(ks.name);
    if (!h) {
      h = {
        db: this.env.openDB<unknown, string>(ks.name, { encoding: 'msgpack', sharedStructuresKey: Symbol.for('structures') }),
        raw: this.env.openDB<Buffer, string>(ks.name, { encoding: 'binary' }),
        memo: this.#memo.entriesFor(ks.name),
      };
      this.#handles.set(ks.name, h);
    }
    return h;
  }

  get<V>(ks: Keyspace<V>, k: string): Promise<V | undefined> {
    return later(() => this.#read(ks, k));
  }

  /**
   * The latest committed value at `k`, synchronously (the contract's fast path); for the hot
   * keyspaces a frozen record shared until the next commit (lmdb-read-memo.ts).
   */
  getNow<V>(ks: Keyspace<V>, k: string): V | undefined {
    checkKey(ks, k);
    const h = this.handles(ks);
    if (h.memo === undefined) return h.db.get(k) as V | undefined;
    return this.#memo.read(h.memo, h.db, k) as V | undefined;
  }

  getMany<const R extends ReadonlyArray<RecordRef<unknown>>>(refs: R): Promise<RecordValues<R>> {
    return later(() => refs.map(([ks, k]) => this.#read(ks, k)) as RecordValues<R>);
  }

  #read<V>(ks: Keyspace<V>, k: string): V | undefined {
    checkKey(ks, k);
    return this.handles(ks).db.get(k) as V | undefined;
  }

  range<V>(ks: Keyspace<V>, opts?: RangeOptions): Promise<Array<Entry<V>>> {
    return Promise.resolve(scan(this.handles(ks).db as Database<V, string>, opts));
  }

  /**
   * Runs `body` until an attempt commits (see the top of this file). The first attempt runs
   * optimistically beside any others; once it has conflicted, the later attempts queue on the
   * contention gate (engine/storage/contention-gate.ts), so transactions changing one hot record
   * commit one after the other instead of failing after `maxAttempts`.
   * @throws TransactionConflictError after `maxAttempts` attempts (default 16) that all conflicted.
   */
  async transact<T>(body: (tx: MetadataTransaction) => Promise<T> | T, opts: TransactOptions = {}): Promise<T> {
    const maxAttempts = opts.maxAttempts ?? 16;
    const clear = this.#gate.whenClear();
    if (clear) await clear;
    const first = await this.#attempt(body, false);
    if (first.committed) return first.result;
    return this.#gate.serially(async () => {
      for (let attempt = 2; attempt <= maxAttempts; attempt++) {
        const next = await this.#attempt(body, true);
        if (next.committed) return next.result;
      }
      throw new TransactionConflictError(maxAttempts);
    });
  }

  /** One attempt of `body`: run, validate, commit (or validate only when it wrote nothing). */
  async #attempt<T>(body: (tx: MetadataTransaction) => Promise<T> | T, retry: boolean): Promise<{ committed: true; result: T } | { committed: false }> {
    // lmdb-js renews its read snapshot on a timer; after a conflict, read the newest state
    // at once (else the retry would read the same stale snapshot and conflict again).
    if (retry) {
      this.env.resetReadTxn();
      this.#memo.forget();
    }
    const tx = new Attempt(this);
    const result = await body(tx);
    if (tx.writes.size === 0) {
      // Read-only: lmdb-js keeps one read snapshot for a synchronous run, so this pass sees
      // one committed state; if every read still holds there, the reads were consistent.
      return tx.valid() ? { committed: true, result } : { committed: false };
    }
    let committed: boolean;
    try {
      // Within the disk deadline: a commit the disk does not complete in time answers
      // STORAGE_STALLED (503); it lands whole later or not at all (disk-deadline.ts).
      committed = await dataDisk.run('a metadata commit', this.env.transaction(() => {
        if (tx.reads.length + tx.ranges.length > 0 && !tx.valid()) return false;
        tx.apply();
        this.#memo.bump();
        return true;
      }));
    } catch (e) {
      this.#memo.forget();
      if (isStalled(e)) throw e;
      // A full disk or map: LMDB aborted the whole transaction, nothing of it was written.
      const cause = await commitCause(e);
      throw await asStorageFull(cause, 'the metadata change', (this.env as unknown as { path: string }).path);
    }
    // lmdb-js renewed the read snapshot when the commit completed: read the new generation.
    this.#memo.forget();
    return committed ? { committed: true, result } : { committed: false };
  }

  /**
   * Names of the keyspaces (named databases) the environment holds, in name order: for
   * whole-store tools that copy every keyspace without knowing its records (`slipway migrate`).
   */
  keyspaceNames(): string[] {
    return [...this.env.getKeys()].filter((k): k is string => typeof k === 'string' && k !== GENERATION_DB);
  }

  /**
   * Ids of the other live processes that have the environment open (a running `slipway serve`,
   * `gc` or `fsck`), for tools that need it to themselves (`slipway migrate`). Every process
   * with the environment open holds LMDB's shared POSIX lock on `lock.mdb` for as long as it is
   * open; on Linux `/proc/locks` lists those locks with their process ids. Elsewhere only LMDB's
   * reader table is consulted (after clearing the slots of dead processes), which shows a
   * process only while it holds a read snapshot.
   */
  otherProcesses(): number[] {
    const pids = new Set<number>();
    this.env.readerCheck();
    for (const line of this.env.readerList().split('\n').slice(1)) {
      const pid = Number(line.trim().split(/\s+/)[0]);
      if (Number.isSafeInteger(pid) && pid > 0) pids.add(pid);
    }
    const path = (this.env as unknown as { path: string }).path;
    for (const pid of lockHolders(join(path, 'lock.mdb'))) pids.add(pid);
    pids.delete(process.pid);
    return [...pids].sort((a, b) => a - b);
  }

  /**
   * In-process: one process owns the environment (a server; the operator CLI's `slipway gc`
   * is a separate, documented-safe run). The lock is never lost, so `signal` never aborts.
   */
  async exclusive<T>(name: string, fn: (signal: AbortSignal) => Promise<T>, opts: ExclusiveOptions = {}): Promise<ExclusiveOutcome<T>> {
    checkLockName(name);
    for (let held = this.#held.get(name); held; held = this.#held.get(name)) {
      if (!opts.wait) return { ran: false };
      await held;
    }
    let release!: () => void;
    this.#held.set(name, new Promise<void>((r) => { release = r; }));
    try {
      return { ran: true, value: await fn(new AbortController().signal) };
    } finally {
      this.#held.delete(name);
      release();
    }
  }

  /**
   * Reads the keys of the hot keyspaces (read-cache.ts `CACHED_KEYSPACES`, in that order) once,
   * in slices, so their pages are mapped before requests need them (lmdb-prewarm.ts), until
   * about `budgetBytes` of pages were read. Stops when the store closes.
   */
  prewarm(budgetBytes: number): Promise<PrewarmResult> {
    const declared = new Map(declaredKeyspaces().map((ks) => [ks.name, ks]));
    const hot = [...CACHED_KEYSPACES].flatMap((name) => declared.get(name) ?? []);
    return prewarmDatabases(hot.map((ks) => this.handles(ks).raw), budgetBytes, () => this.#closed);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.env.close();
  }
}
