/**
 * A node-local cache of committed records for reads outside transactions on a networked
 * metadata store (engine/storage/postgres-metadata.ts): the data structure only — what is
 * cached, how fills race with invalidations, and the memory bound. What invalidates it, and
 * when it may be used at all, is engine/storage/postgres-invalidation.ts.
 *
 * ## What is cached
 * Only the keyspaces in `CACHED_KEYSPACES`: the records the hot request paths read by key
 * (token checks, manifest GET by tag, blob HEAD, `GET /account`) and that change far less often
 * than they are read. High-churn keyspaces (rate-limit buckets, "last used" stamps, upload
 * sessions, sign-in state) are never cached. Absence is cached too (a missing tag or blob link
 * answers without a round trip); a later put invalidates it like any change.
 *
 * Values are kept as their JSON text and parsed on every hit, so no two readers ever share one
 * mutable object (callers may change what `get` returns, as they may with every other store).
 *
 * ## Fill race
 * A read that missed the cache (`beginFill`) was issued at some moment; an invalidation of its
 * key, or of everything, that arrives after that moment may concern a commit the read did not
 * see. So every invalidation advances a generation counter, and `fill` stores the value only
 * when neither its key nor the whole cache was invalidated since its `beginFill`: a read that
 * started before an invalidation never repopulates the value that invalidation removed. Per-key
 * invalidation generations are remembered only while fills are in flight (bounded by
 * `MAX_TRACKED_INVALIDATIONS`, past which every fill in flight is refused).
 *
 * A read may also learn its key only from its own answer: one statement that reads a record and
 * the record it names (a tag and its manifest: postgres-reads.ts `cachedGetWithNamed`). Its
 * ticket (`beginUnkeyedFill`) takes the generation before the statement is sent and counts as a
 * fill in flight from then on, so every per-key invalidation delivered meanwhile is remembered,
 * whatever key it names; `fillKeyed` then applies the same rule to the key the answer named.
 *
 * ## Memory
 * Least recently used entries are dropped once the entries' JSON text exceeds `maxBytes`
 * (default 16 MiB, counted as UTF-16 code units × 2) or their count exceeds `maxEntries`
 * (default 25,000); a single value larger than `maxBytes / 16` is not cached.
 *
 * The defaults follow what the cache costs the process. Filled with 100,000 entries of a pushing
 * registry's mix (a quarter each manifests of ~900 characters, tags, blob records and cached
 * absences), the cache held 59–81 MB of V8 heap (two mixes of key lengths; measured 2026-11-28,
 * Node 24): its text, its keys, and a few hundred bytes per entry of list node and Map slot. At
 * 25,000 entries it holds about 20 MB, still some 6,000 images' tag, manifest and blob records:
 * far more than the images a registry's deploys pull again within minutes. What a full cache
 * costs the process is more than its heap: V8 lets the old generation grow past its live objects
 * before collecting. A node on PostgreSQL grew by 74.5 MiB of anonymous memory from 1,000 to
 * 30,000 images (29,000 pushes since its start) at bounds of 64 MiB / 100,000, by 60.6–67.5 MiB at
 * 32 MiB / 50,000, and by 39.6–47.0 MiB at these, against a growth budget of 64 MiB for the
 * whole process (docs/performance.md "Runs Q, R and S", "Runs M–P").
 *
 * Recency is a doubly linked list through the entries (most recent first), so a hit, a fill, an
 * invalidation and each eviction are O(1). Not `Map.delete` + `Map.set` on every hit with eviction
 * by iterating the Map from its oldest entry: V8's ordered hash table keeps the slot of every
 * deleted entry until it rehashes, and that iteration steps over all of them — at 80,000 entries
 * under a hit-heavy random workload, tens of µs per fill (engine/registry/content-cache.ts met the
 * same cost).
 */

/**
 * Keyspaces whose records a node may cache (by name, so that whole-store tools writing through
 * `storedKeyspace` invalidate them too). Each is read by key on a hot path; none changes on
 * every request. Never add a keyspace written per request (rate-limits, authorization-use).
 */
export const CACHED_KEYSPACES: ReadonlySet<string> = new Set([
  // identity: token checks and GET /account
  'tokens', 'authorizations', 'accounts',
  // oauth: the client behind a token
  'clients',
  // platform: repository → app and team access
  'apps', 'apps-by-name', 'teams', 'memberships',
  // registry: manifest GET by tag, blob HEAD
  'repositories', 'tags', 'manifests', 'repository-blobs', 'repository-manifests',
  // blobs: blob records (HEAD's size and state)
  'blobs',
]);

/** Fills in flight may track at most this many per-key invalidations before all are refused. */
export const MAX_TRACKED_INVALIDATIONS = 10_000;

/** One cached record: its JSON text, or null for "no record". */
type Cached = string | null;

/** An entry of the recency list (a ring through a sentinel: `next` is less recent). */
interface Node {
  readonly id: string;
  text: Cached;
  prev: Node;
  next: Node;
}

/** Bytes `text` counts against `maxBytes` (UTF-16 code units × 2; none for absence). */
function sizeOf(text: Cached): number {
  return text === null ? 0 : text.length * 2;
}

/** Limits of a ReadCache. */
export interface ReadCacheLimits {
  /** Upper bound of the cached JSON text, bytes (default 16 MiB). */
  maxBytes?: number;
  /** Upper bound of the entry count (default 25,000). */
  maxEntries?: number;
}

/** A ticket for one read that missed: pass it back to `fill`. */
export interface FillTicket {
  readonly id: string;
  readonly gen: number;
}

/**
 * A ticket for one read whose key is not known when it starts (it is named by another record the
 * same statement reads): pass it back to `fillKeyed` with the key, or to `abandon`.
 */
export interface UnkeyedFillTicket {
  readonly gen: number;
}

/** The cache id of a record. */
function idOf(keyspace: string, key: string): string {
  return keyspace + '\0' + key;
}

/** The cache (see the top of this file). Single-threaded: every method runs to completion. */
export class ReadCache {
  readonly maxBytes: number;
  readonly maxEntries: number;
  /** id → entry (its JSON text or null), each on the recency ring. */
  readonly #entries = new Map<string, Node>();
  /** Sentinel of the recency ring: `next` is the most recent entry, `prev` the least recent. */
  readonly #ring: Node = ReadCache.#sentinel();
  #bytes = 0;
  /** Advanced by every invalidation. */
  #gen = 0;
  /** Generation of the last whole-cache invalidation. */
  #allGen = 0;
  /** id → generation of its last invalidation, kept while fills are in flight. */
  readonly #keyGen = new Map<string, number>();
  #fills = 0;
  /** Statistics since start: hits, misses, fills refused because of a racing invalidation. */
  readonly stats = { hits: 0, misses: 0, refused: 0 };

  constructor(limits: ReadCacheLimits = {}) {
    this.maxBytes = limits.maxBytes ?? 16 * 1024 * 1024;
    this.maxEntries = limits.maxEntries ?? 25_000;
  }

  /** True when `keyspace`'s records may be cached. */
  static caches(keyspace: string): boolean {
    return CACHED_KEYSPACES.has(keyspace);
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Bytes counted against `maxBytes` now (the entries' JSON text, UTF-16 code units × 2). */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The cached record: `{ value }` (value undefined when the record is known absent; parsed
   * afresh on each call), or null on a miss.
   */
  lookup<V>(keyspace: string, key: string): { value: V | undefined } | null {
    const node = this.#entries.get(idOf(keyspace, key));
    if (node === undefined) {
      this.stats.misses++;
      return null;
    }
    this.stats.hits++;
    this.#unlink(node);
    this.#pushFront(node);
    const text = node.text;
    return { value: text === null ? undefined : (JSON.parse(text) as V) };
  }

  /**
   * Whether the cache holds an entry for the record (its value, or its absence), without counting
   * a hit or a miss and without touching recency: a read that finds none needs no read barrier
   * (postgres-metadata.ts `#needsBarrier`).
   */
  holds(keyspace: string, key: string): boolean {
    return this.#entries.has(idOf(keyspace, key));
  }

  /** Starts a read that missed; call `fill` or `abandon` with the ticket when it ends. */
  beginFill(keyspace: string, key: string): FillTicket {
    this.#fills++;
    return { id: idOf(keyspace, key), gen: this.#gen };
  }

  /**
   * Starts a read whose key is learnt only from its answer; call `fillKeyed` or `abandon` with
   * the ticket when it ends. Rule (see the top of this file): the ticket carries the generation
   * of this moment, before the statement is sent, and keeps per-key invalidations tracked until
   * it ends, so a fill of whichever key the answer names is refused when that key, or the whole
   * cache, was invalidated after this call — exactly as if `beginFill` had been called with that
   * key now.
   */
  beginUnkeyedFill(): UnkeyedFillTicket {
    this.#fills++;
    return { gen: this.#gen };
  }

  /**
   * Ends a read started with `beginUnkeyedFill`, whose answer named `keyspace`/`key`: `fill` with
   * that key and the ticket's generation (stores `text` unless refused).
   */
  fillKeyed(ticket: UnkeyedFillTicket, keyspace: string, key: string, text: string | null): void {
    this.fill({ id: idOf(keyspace, key), gen: ticket.gen }, text);
  }

  /**
   * Ends a read: stores `text` (JSON text of the record, or null when absent) unless the key or
   * the whole cache was invalidated since the ticket was issued.
   */
  fill(ticket: FillTicket, text: string | null): void {
    const stale = this.#allGen > ticket.gen || (this.#keyGen.get(ticket.id) ?? -1) > ticket.gen;
    this.abandon();
    if (stale) {
      this.stats.refused++;
      return;
    }
    const size = sizeOf(text);
    if (size > this.maxBytes / 16) return;
    let node = this.#entries.get(ticket.id);
    if (node) {
      this.#bytes -= sizeOf(node.text);
      node.text = text;
      this.#unlink(node);
    } else {
      node = { id: ticket.id, text, prev: this.#ring, next: this.#ring };
      this.#entries.set(ticket.id, node);
    }
    this.#pushFront(node);
    this.#bytes += size;
    while ((this.#bytes > this.maxBytes || this.#entries.size > this.maxEntries) && this.#ring.prev !== this.#ring) this.#remove(this.#ring.prev);
  }

  /** Ends a read without storing anything (it failed). */
  abandon(): void {
    if (--this.#fills === 0) this.#keyGen.clear();
  }

  /** Forgets the records `ids` (keyspace, key pairs), and refuses fills of them in flight. */
  invalidate(records: Iterable<readonly [string, string]>): void {
    const gen = ++this.#gen;
    for (const [keyspace, key] of records) {
      const id = idOf(keyspace, key);
      this.#drop(id);
      if (this.#fills > 0) this.#keyGen.set(id, gen);
    }
    if (this.#keyGen.size > MAX_TRACKED_INVALIDATIONS) this.clear();
  }

  /** Forgets everything, and refuses every fill in flight. */
  clear(): void {
    this.#allGen = ++this.#gen;
    this.#entries.clear();
    this.#ring.next = this.#ring.prev = this.#ring;
    this.#keyGen.clear();
    this.#bytes = 0;
  }

  /** Forgets the entry `id` when held. */
  #drop(id: string): void {
    const node = this.#entries.get(id);
    if (node !== undefined) this.#remove(node);
  }

  /** Forgets a held entry. */
  #remove(node: Node): void {
    this.#entries.delete(node.id);
    this.#unlink(node);
    this.#bytes -= sizeOf(node.text);
  }

  /** Takes `node` off the recency ring. */
  #unlink(node: Node): void {
    node.prev.next = node.next;
    node.next.prev = node.prev;
  }

  /** Puts `node` on the recency ring as the most recent entry. */
  #pushFront(node: Node): void {
    node.prev = this.#ring;
    node.next = this.#ring.next;
    this.#ring.next.prev = node;
    this.#ring.next = node;
  }

  /** An empty ring's sentinel (its own neighbour both ways). */
  static #sentinel(): Node {
    const ring = { id: '', text: null } as Node;
    ring.prev = ring.next = ring;
    return ring;
  }
}
