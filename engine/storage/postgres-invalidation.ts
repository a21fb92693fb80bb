/**
 * Invalidation of the node-local read cache (engine/storage/read-cache.ts) through PostgreSQL
 * LISTEN/NOTIFY, and the rule for when the cache may be used at all.
 *
 * ## Sending
 * Every transaction that writes a cached keyspace sends one notification on channel
 * `slipway_kv` from inside the transaction, in the same statement that applies its writes
 * (engine/storage/postgres-metadata.ts): PostgreSQL delivers it to every listening session only
 * if and when the transaction commits, after the commit is visible to other sessions. The
 * payload is `<node>:<seq>:<records>`, `<records>` being the JSON array
 * `[keyspace, key, keyspace, key, …]`, or `*` ("forget everything") when the payload would
 * exceed `MAX_PAYLOAD_BYTES` (PostgreSQL's limit is 8000 bytes). It is sent whether or not the
 * sending node caches (another node may).
 *
 * Application-side rather than a trigger: the list of cached keyspaces lives in the code
 * (read-cache.ts), a transaction sends one batched notification instead of one per row, the
 * notification rides on the write statement (no extra round trip), and writes to uncached
 * keyspaces (rate-limit buckets, every `GET /account`) cost nothing. Every Slipway writer goes
 * through `transact` — request paths, background work, start-up data migrations and `slipway
 * migrate` into PostgreSQL — so all of them notify. A writer outside Slipway (psql) must send
 * `NOTIFY slipway_kv, '-:0:*'` after its change, or the nodes be restarted.
 *
 * ## Receiving, and when the cache is used
 * Each node LISTENs on a dedicated connection and, on each notification, evicts the records it
 * names (everything for `*`). The cache is *usable* only while that connection is confirmed:
 * after `LISTEN` succeeded (the cache is cleared at that moment, so nothing cached before is
 * trusted) and as long as every round trip through it (below) comes back within
 * `heartbeatTimeoutMs`. On a connection error, its end, or a late round trip, the cache is
 * cleared and bypassed (every read goes to the database) until a new connection has LISTENed.
 *
 * ## The read barrier: no stale read after an acknowledged write
 * Before a request's first read that the cache could answer (it holds an entry for the record:
 * a read that finds none goes to the database at once, whose answer is fresh by itself:
 * postgres-metadata.ts `#needsBarrier`), the node sends a notification of no records on its
 * listening connection and waits until it comes back (`sync`; one round trip serves every
 * request waiting when it starts, and a request's later reads reuse it: read-scope.ts).
 * PostgreSQL delivers notifications to each listener in commit order, and only once the
 * committing transaction is visible. So when the barrier's own notification arrives, the
 * notifications of every transaction that committed before the barrier was sent — on any node,
 * in particular every write whose client already had its answer when this request arrived —
 * have been received and their records evicted; what the cache still holds was read after those
 * commits. A revocation acknowledged on node A is therefore refused by node B at B's very next
 * request, a tag moved on A is served moved by B, with no time window. The price is one
 * round trip per request (shared by concurrent requests: under load a fraction of a statement
 * per request), against 4–7 statements per request without the cache.
 *
 * Fill race: a read that missed the cache stores its answer only if no invalidation of its key
 * (or of everything) arrived since it was issued (read-cache.ts), so a read that raced a commit
 * never repopulates the value that commit's notification removed.
 *
 * ## Worst-case staleness
 * - Normal operation: none as seen by clients — a read that starts after a write was
 *   acknowledged sees it (the barrier above). Reads without a request scope (background work)
 *   take a barrier of their own each.
 * - Listener lost without any error (a network partition, a stalled socket): the barrier's
 *   round trip does not come back; after `heartbeatTimeoutMs` (1 s by default) the cache is
 *   cleared and bypassed. Requests waiting meanwhile are delayed, not answered stale. A
 *   heartbeat (a barrier with no reader) every `heartbeatMs` finds a lost listener on an idle
 *   node too.
 * - Writers that bypass Slipway (psql) send no notification: their changes are seen once the
 *   records are evicted by other writes, LRU, or a `NOTIFY slipway_kv, '-:0:*'`.
 * Reads inside transactions never use the cache (serializable reads always hit the database).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ReadCache } from './read-cache.js';

/** The notification channel. */
export const CHANNEL = 'slipway_kv';
/** Largest payload sent with its records; past it, `*`. PostgreSQL's limit is 8000 bytes. */
export const MAX_PAYLOAD_BYTES = 7900;

/** Settings of the listener. */
export interface InvalidationOptions {
  connectionString: string;
  connectTimeoutMs: number;
  /** Interval of heartbeats (round trips while no request asks for one), ms (default 1000). */
  heartbeatMs?: number;
  /** Longest a round trip (read barrier or heartbeat) may take to come back, ms (default 1000); past it the listener counts as lost. */
  heartbeatTimeoutMs?: number;
  /** Wait before reconnecting a lost listener, ms (default 500). */
  retryMs?: number;
}

/** The notification of one commit: its payload (`<node>:<seq>:<records>`), its sequence number, and the (keyspace, key) pairs it names. */
export interface Notice {
  payload: string;
  seq: number;
  records: Array<readonly [string, string]>;
}

/** The listener of one node (see the top of this file). */
export class Invalidation {
  readonly cache: ReadCache;
  /** This store instance's id in payloads. */
  readonly node = randomBytes(6).toString('hex');
  readonly #opts: Required<InvalidationOptions>;
  #seq = 0;
  #roundTrips = 0;
  #client: pg.Client | undefined;
  #usable = false;
  #closed = false;
  #heartbeat: NodeJS.Timeout | undefined;
  #retry: NodeJS.Timeout | undefined;
  /** seq → resolver of a round trip waiting for this node's own notification. */
  readonly #waiters = new Map<number, (ok: boolean) => void>();
  /** Callers of `sync` waiting for the next round trip. */
  #next: Array<(fresh: boolean) => void> = [];
  #syncing = false;
  /** Listener sessions established so far (tests, diagnostics). */
  connects = 0;
  /**
   * Told of every `sync` as it resolves: how long its caller waited, seconds, and whether the
   * cache may be used (server/ops/metrics.ts: `slipway_database_read_barrier_seconds`).
   */
  onSync: ((seconds: number, usable: boolean) => void) | undefined;

  constructor(opts: InvalidationOptions, cache = new ReadCache()) {
    this.cache = cache;
    this.#opts = { ...opts, heartbeatMs: opts.heartbeatMs ?? 1000, heartbeatTimeoutMs: opts.heartbeatTimeoutMs ?? 1000, retryMs: opts.retryMs ?? 500 };
  }

  /** Round trips of the read barrier since the start, the heartbeat's included (metrics). */
  get roundTrips(): number {
    return this.#roundTrips;
  }

  /** True while the cache may be used (listener confirmed). */
  get usable(): boolean {
    return this.#usable;
  }

  /** The backend pid of the listening session, or undefined while there is none (tests). */
  get listenerPid(): number | undefined {
    return (this.#client as unknown as { processID?: number } | undefined)?.processID;
  }

  /** Connects the listener; resolves after the first attempt, successful or not (it retries). */
  async start(): Promise<void> {
    await this.#connect();
  }

  /**
   * The notification of a transaction writing `written` (keyspace, key pairs), or null when it
   * writes no cached keyspace.
   */
  noticeFor(written: Iterable<readonly [string, string]>): Notice | null {
    const records: Array<readonly [string, string]> = [];
    const flat: string[] = [];
    for (const r of written) {
      if (!ReadCache.caches(r[0])) continue;
      records.push(r);
      flat.push(r[0], r[1]);
    }
    if (records.length === 0) return null;
    const seq = ++this.#seq;
    let payload = `${this.node}:${seq}:${JSON.stringify(flat)}`;
    if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) payload = `${this.node}:${seq}:*`;
    return { payload, seq, records };
  }

  /** After the commit of `notice`: evicts its records here at once (every node evicts on receipt). */
  committed(notice: Notice): void {
    this.cache.invalidate(notice.records);
  }

  /**
   * The read barrier: resolves true once this node's listener has received every notification
   * of the transactions that committed before the call (then the cache holds nothing they
   * changed), false when the cache may not be used (listener lost, or its round trip late).
   * One round trip serves every caller waiting when it starts: callers arriving while one is in
   * flight wait for the next, which starts after them.
   */
  sync(): Promise<boolean> {
    if (!this.#usable) return Promise.resolve(false);
    const observe = this.onSync;
    const start = observe ? performance.now() : 0;
    return new Promise((resolve) => {
      this.#next.push(observe ? (fresh) => { observe((performance.now() - start) / 1000, fresh); resolve(fresh); } : resolve);
      if (!this.#syncing) void this.#syncLoop();
    });
  }

  /** Stops listening; the cache is cleared and no longer used. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    this.#lost();
  }

  /** Runs round trips while callers wait for one; each batch learns whether the cache is usable. */
  async #syncLoop(): Promise<void> {
    this.#syncing = true;
    try {
      while (this.#next.length > 0) {
        const batch = this.#next;
        this.#next = [];
        const client = this.#client;
        const ok = this.#usable && client !== undefined && (await this.#roundTrip(client));
        for (const r of batch) r(ok && this.#usable);
      }
    } finally {
      this.#syncing = false;
    }
  }

  /**
   * A notification of no records sent on the listening connection, and its receipt there.
   * PostgreSQL delivers notifications to each listener in commit order, so once it is back,
   * every notification committed before it was sent has been received. False (and the listener
   * lost) when it fails or is not back within heartbeatTimeoutMs.
   */
  async #roundTrip(client: pg.Client): Promise<boolean> {
    this.#roundTrips++;
    const seq = ++this.#seq;
    const back = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        if (this.#waiters.delete(seq)) {
          resolve(false);
          this.#lost();
        }
      }, this.#opts.heartbeatTimeoutMs);
      timer.unref();
      this.#waiters.set(seq, (ok) => { clearTimeout(timer); resolve(ok); });
    });
    client.query('SELECT pg_notify($1, $2)', [CHANNEL, `${this.node}:${seq}:[]`]).catch(() => {
      if (this.#client === client) this.#lost();
    });
    return back;
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({
      connectionString: this.#opts.connectionString, connectionTimeoutMillis: this.#opts.connectTimeoutMs,
      query_timeout: this.#opts.heartbeatTimeoutMs + this.#opts.connectTimeoutMs, keepAlive: true,
      application_name: 'slipway-listener',
    });
    this.#client = client;
    client.on('error', () => { if (this.#client === client) this.#lost(); });
    client.on('end', () => { if (this.#client === client) this.#lost(); });
    client.on('notification', (m) => { if (this.#client === client && m.channel === CHANNEL) this.#received(m.payload ?? ''); });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch {
      if (this.#client === client) this.#lost();
      return;
    }
    if (this.#client !== client || this.#closed) return;
    this.connects++;
    this.cache.clear();
    this.#usable = true;
    this.#heartbeat = setInterval(() => { if (!this.#syncing) void this.sync(); }, this.#opts.heartbeatMs);
    this.#heartbeat.unref();
  }

  #received(payload: string): void {
    const first = payload.indexOf(':');
    const second = payload.indexOf(':', first + 1);
    if (first < 0 || second < 0) {
      this.cache.clear();
      return;
    }
    const body = payload.slice(second + 1);
    if (body === '*') this.cache.clear();
    else if (body !== '[]') {
      try {
        const flat = JSON.parse(body) as string[];
        const pairs: Array<readonly [string, string]> = [];
        for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i]!, flat[i + 1]!]);
        this.cache.invalidate(pairs);
      } catch {
        this.cache.clear();
      }
    }
    if (payload.slice(0, first) === this.node) {
      const seq = Number(payload.slice(first + 1, second));
      const w = this.#waiters.get(seq);
      if (w) { this.#waiters.delete(seq); w(true); }
    }
  }

  /** The listener is gone or unconfirmed: clear and bypass the cache, release waiters, reconnect. */
  #lost(): void {
    this.#usable = false;
    this.cache.clear();
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    const client = this.#client;
    this.#client = undefined;
    if (client) {
      client.removeAllListeners('notification');
      client.on('error', () => {});
      client.end().catch(() => {});
    }
    for (const w of this.#waiters.values()) w(false);
    this.#waiters.clear();
    if (!this.#closed && !this.#retry) {
      this.#retry = setTimeout(() => { this.#retry = undefined; void this.#connect(); }, this.#opts.retryMs);
      this.#retry.unref();
    }
  }
}
