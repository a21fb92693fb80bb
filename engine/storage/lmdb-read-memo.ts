/**
 * Decoded records kept between synchronous reads on the embedded store (LMDB), valid only while
 * nothing at all was committed to the environment since they were read, by this process or any
 * other (`slipway gc`, `fsck --repair`, `app create`, … open the same LMDB file while a server
 * runs).
 *
 * ## How a change is seen
 * Every commit through `LmdbMetadataStore.transact` (the only writer of the environment) also
 * writes a new random 8-byte generation into the database `GENERATION_DB`, in the same LMDB write
 * transaction. A memoized read first reads that generation (one LMDB get of 8 bytes, no
 * decoding) from the same read snapshot the record would be read from: when it differs from the
 * generation the kept records were read at, every kept record is dropped. A record kept is
 * therefore exactly the record a read of that snapshot returns: a revocation or deletion
 * committed by any process is seen by the first read whose snapshot includes it, as without the
 * memo (the read snapshot itself is lmdb-js's, renewed between event-loop turns).
 *
 * The generation is read once per synchronous run of JavaScript (until the next microtask
 * checkpoint), not once per read: lmdb-js keeps one read snapshot for a run and renews it only
 * between event-loop tasks (a timer) or right after this process's own commit (lmdb-js resets it
 * when the commit completes). Another process's commit therefore becomes readable only in a new
 * task, where the generation is read again; a commit of this process calls `forget()` when it
 * completes (and `bump()` at once), so its caller reads its own writes. A request received after a
 * change committed is handled in a later task than the change's commit and sees it.
 *
 * A random value rather than a counter: a data directory restored from a backup, or written by
 * another process, can never present a generation this process saw for different contents.
 *
 * ## What is kept
 * Only the keyspaces in `MEMO_KEYSPACES`: read-cache.ts's `CACHED_KEYSPACES` (the records hot
 * request paths read by key, which change far less often than they are read) but `manifests`.
 * Absence is kept too. Values are deeply
 * frozen and shared by every reader until the next commit: callers of `getNow` never modify what
 * it returns (metadata.ts `getNow`). Bounded: a value over `MAX_VALUE_BYTES` encoded is not
 * kept, and everything is dropped once the kept values' encoded bytes exceed `MAX_BYTES` or a
 * keyspace holds `MAX_ENTRIES` keys. Any commit empties the memo, so with writes in flight it
 * mostly holds the records read since the last one. Once reads have filled a keyspace's memo to
 * `MAX_ENTRIES` (reads spread over more records than it keeps: manifest GETs by tag over 100,000
 * images), a record of that keyspace is kept at its second read, not its first
 * (engine/seen-filter.ts): keeping every record read once only made each outlive a young-generation
 * collection, be promoted into V8's old generation and be dropped there at the next clear.
 *
 * A kept record costs a Map look-up (plus one 8-byte generation read per run) instead of a get
 * and a msgpack decode (0.8–2 µs each on this project's machine); measured effect per request:
 * bench/README.md "Blob HEAD: decoded records kept between commits, the stat once a second".
 */
import { randomFillSync } from 'node:crypto';
import type { Database, RootDatabase } from 'lmdb';
import { CACHED_KEYSPACES } from './read-cache.js';
import { SeenFilter } from '../seen-filter.js';

/**
 * Name of the LMDB database holding the commit generation. Not a keyspace (keyspace names are
 * `[a-z0-9-]+`), and left out of `keyspaceNames()`.
 */
export const GENERATION_DB = '_commit-generation';
const GENERATION_KEY = 'g';

/** Most keys kept per keyspace before that keyspace's memo is emptied. */
export const MAX_ENTRIES = 10_000;
/** Largest encoded value kept, bytes. */
export const MAX_VALUE_BYTES = 64 * 1024;
/** Encoded bytes of all kept values before the whole memo is emptied. */
export const MAX_BYTES = 16 * 1024 * 1024;

const ABSENT = Symbol('absent');

/**
 * The keyspaces memoized: `CACHED_KEYSPACES` but `manifests`. A hot path reads a manifest record
 * by key only when a manifest GET or HEAD misses the content cache (engine/registry/content-cache.ts),
 * which then keeps the bytes it serves; keeping the decoded record too cost a deep freeze per
 * miss, and with GETs spread over more manifests than the content cache holds, the records
 * filled the memo to `MAX_BYTES`, which empties it whole: the token, repository and tag records
 * the same requests need went with them, again and again. Measured in the growth benchmark
 * (bench/README.md "Growth"), manifest GETs over 20,000 images spent about a tenth of their
 * server time in `deepFreeze`.
 */
export const MEMO_KEYSPACES: ReadonlySet<string> = new Set([...CACHED_KEYSPACES].filter((k) => k !== 'manifests'));

/** One keyspace's kept records (key → frozen value, or ABSENT). */
export type MemoEntries = Map<string, unknown>;

/** The read memo of one LMDB environment (see the file header). */
export class LmdbReadMemo {
  readonly #db: Database<Buffer, string>;
  /** The generation the kept records were read at; `#known` false before the first read. */
  readonly #generation = new Uint8Array(8);
  #known = false;
  /** True while the generation was read in this synchronous run (cleared by a microtask). */
  #checked = false;
  readonly #uncheck = (): void => { this.#checked = false; };
  #bytes = 0;
  readonly #all: MemoEntries[] = [];
  /** The doorkeeper of each keyspace whose memo reads filled (see the file header). */
  readonly #admission = new Map<MemoEntries, SeenFilter>();

  constructor(env: RootDatabase) {
    this.#db = env.openDB<Buffer, string>(GENERATION_DB, { encoding: 'binary' });
  }

  /** A new memo for keyspace `name`, or undefined when that keyspace is not memoized. */
  entriesFor(name: string): MemoEntries | undefined {
    if (!MEMO_KEYSPACES.has(name)) return undefined;
    const m: MemoEntries = new Map();
    this.#all.push(m);
    return m;
  }

  /**
   * The value at `k` of `db` (the decoded handle of the keyspace whose memo is `entries`): the
   * kept one when nothing was committed since it was read, else read, kept and returned.
   * Kept values are frozen (shared by every reader); one not kept (over `MAX_VALUE_BYTES`, or a
   * first sighting, see the file header) is the caller's fresh copy. Call outside write
   * transactions only.
   */
  read(entries: MemoEntries, db: Database<unknown, string>, k: string): unknown {
    this.#sync();
    const kept = entries.get(k);
    if (kept !== undefined) return kept === ABSENT ? undefined : kept;
    const v = db.get(k);
    if (v === undefined) {
      if (entries.size >= MAX_ENTRIES) entries.clear();
      entries.set(k, ABSENT);
      return undefined;
    }
    const size = (db as unknown as { lastSize: number }).lastSize;
    if (!(size >= 0 && size <= MAX_VALUE_BYTES)) return v;
    if (this.#admission.get(entries)?.firstSighting(k)) return v;
    if (this.#bytes + size > MAX_BYTES) this.#clear();
    if (entries.size >= MAX_ENTRIES) {
      entries.clear();
      if (!this.#admission.has(entries)) this.#admission.set(entries, new SeenFilter());
    }
    this.#bytes += size;
    entries.set(k, deepFreeze(v));
    return v;
  }

  /**
   * Writes a new generation. Call inside the LMDB write transaction of every commit (lmdb-js
   * `env.transaction`'s callback), so that the generation changes with the data, atomically.
   */
  bump(): void {
    this.#db.put(GENERATION_KEY, randomFillSync(Buffer.allocUnsafe(8)));
    this.#checked = false;
  }

  /**
   * The read snapshot may have been renewed within this run (a commit of this process
   * completed, or `env.resetReadTxn()` was called): the next read checks the generation again.
   */
  forget(): void {
    this.#checked = false;
  }

  /** Drops every kept record when the current snapshot's generation is not the one they were read at. */
  #sync(): void {
    if (this.#checked) return;
    this.#checked = true;
    queueMicrotask(this.#uncheck);
    const b = this.#db.getBinaryFast(GENERATION_KEY) as Uint8Array | undefined;
    const g = this.#generation;
    if (b === undefined) {
      // Never written: no commit by this build yet. All zeros stands for it (a random
      // generation of eight zero bytes is as likely as any other collision).
      if (this.#known && g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0 && g[6] === 0 && g[7] === 0) return;
      g.fill(0);
    } else {
      if (this.#known && b.length === 8 && b[0] === g[0] && b[1] === g[1] && b[2] === g[2] && b[3] === g[3] && b[4] === g[4] && b[5] === g[5] && b[6] === g[6] && b[7] === g[7]) return;
      g.fill(0);
      g.set(b.subarray(0, 8));
    }
    this.#known = true;
    this.#clear();
  }

  #clear(): void {
    for (const m of this.#all) m.clear();
    this.#bytes = 0;
  }
}

/** Freezes `v` and everything it holds (plain decoded data: objects, arrays, scalars). */
function deepFreeze<T>(v: T): T {
  if (v === null || typeof v !== 'object' || Object.isFrozen(v) || ArrayBuffer.isView(v)) return v;
  Object.freeze(v);
  for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  return v;
}
