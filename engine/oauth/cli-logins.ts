/**
 * Browser logins of the platform CLI (`heroku login`), in the shape of the OAuth 2.0 device
 * authorization grant (RFC 8628): the CLI starts a login and gets a random id plus a polling
 * token; a person signs in on the auth host (password and TOTP) and approves or denies the login
 * in the browser; the CLI's poll then receives one access token, exactly once.
 *
 * Logins live in the metadata store (keyspace `cli-logins`), so behind a load balancer the
 * start, the browser and the polls may each reach a different node. The polling token is kept
 * only as its sha256. The access token is not made at approval but by the one poll that claims
 * the approved login: `claim` moves it from `approved` to `delivered` in one serializable
 * transaction, so two polls, on one node or on two, can never both win, and no token value is
 * ever held waiting for a poll. A waiting poll is woken at once by an answer given through its
 * own node, and re-reads the store every `CLI_LOGIN_RECHECK_MS` to see one given elsewhere.
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { hashToken, newSecret, secretMatches } from '../identity/tokens.js';
import type { CliLoginRecord, CliLoginState } from './records.js';
import { cliLogins } from './keyspaces.js';
import { CLI_LOGIN_MAX_PENDING, CLI_LOGIN_MAX_PENDING_PER_SOURCE, CLI_LOGIN_MEMORY_MS, CLI_LOGIN_TTL_MS } from './limits.js';
import { pruneKeyspace } from './prune.js';

export type { CliLoginState };

/** One CLI login (a stored record: changes go through `decide` and `claim`). */
export type CliLogin = Readonly<CliLoginRecord>;

/** What a poll finds. `approved`: the caller now owns the one delivery for `accountId`. */
export type CliLoginClaim =
  | { kind: 'approved'; login: CliLogin; accountId: string }
  | { kind: 'pending' | 'denied' | 'expired' | 'used' | 'unknown' | 'bad-token' };

/** The result of answering a login in the browser. */
export type CliLoginDecision = 'ok' | 'expired' | 'answered' | 'unknown';

export interface CliLoginLimits {
  /** How long a login may wait for its answer, ms. */
  ttlMs: number;
  /** Most logins in progress at once, across the installation. */
  maxPending: number;
  /** Most logins in progress at once from one source (`start`'s `source`); default CLI_LOGIN_MAX_PENDING_PER_SOURCE. */
  maxPendingPerSource?: number;
}

/** Longest description kept, characters (the CLI sends "Heroku CLI login from <hostname>"). */
export const MAX_CLI_LOGIN_DESCRIPTION = 200;

/** What a login id looks like (`newSecret`: 32 random bytes, base64url); anything else is unknown. */
const LOGIN_ID = /^[A-Za-z0-9_-]{43}$/;

/** True when the login can no longer be answered or claimed at `now` because its time ran out. */
function expiredAt(login: CliLogin, now: number): boolean {
  return now >= login.expiresAt && (login.state === 'pending' || login.state === 'approved');
}

/** True when the login is over and past its memory, at `now`. */
const forgettable = (login: CliLogin, now: number) => now >= login.expiresAt + CLI_LOGIN_MEMORY_MS;

export class CliLogins {
  readonly #waiters = new Map<string, Set<() => void>>();

  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly limits: CliLoginLimits = { ttlMs: CLI_LOGIN_TTL_MS, maxPending: CLI_LOGIN_MAX_PENDING }) {}

  /**
   * Starts a login; forgets logins past their memory on the way. The limits are checked in the
   * transaction that writes the login, so concurrent starts (on any node) cannot pass them.
   * @param description free text from the CLI; trimmed and cut to `MAX_CLI_LOGIN_DESCRIPTION`
   * @param source who asks, as counted for the per-source limit (server/http/client-address.ts
   *   `sourceKey`: an IPv4 address or an IPv6 /64); '' counts as one source of its own
   * @returns the login and its polling token (shown once; only its hash is kept)
   * @throws RATE_LIMITED when `maxPendingPerSource` logins of `source`, or `maxPending` in all,
   *   are already waiting.
   */
  async start(description: string, source = ''): Promise<{ login: CliLogin; token: string }> {
    const now = this.clock.now();
    const perSource = this.limits.maxPendingPerSource ?? CLI_LOGIN_MAX_PENDING_PER_SOURCE;
    const token = newSecret();
    const cleaned = description.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim().slice(0, MAX_CLI_LOGIN_DESCRIPTION);
    const login: CliLoginRecord = {
      id: newSecret(), tokenHash: hashToken(token), description: cleaned || 'Platform CLI login',
      createdAt: now, expiresAt: now + this.limits.ttlMs, state: 'pending', accountId: null, source,
    };
    // Every record: the waiting ones (at most maxPending) and those ended in the last
    // CLI_LOGIN_TTL_MS + CLI_LOGIN_MEMORY_MS (ending one takes a signed-in person). Checked
    // first outside a transaction, so a flood is refused by reads alone, then again inside.
    this.#checkLimits(await this.metadata.range(cliLogins), source, now, perSource);
    await this.metadata.transact(async (tx) => {
      const all = await tx.range(cliLogins);
      this.#checkLimits(all, source, now, perSource);
      for (const e of all) if (forgettable(e.value, now)) tx.remove(cliLogins, e.key);
      tx.put(cliLogins, login.id, login);
    });
    return { login, token };
  }

  /** @throws RATE_LIMITED when `source`, or everybody together, has as many logins waiting as allowed. */
  #checkLimits(all: ReadonlyArray<{ value: CliLoginRecord }>, source: string, now: number, perSource: number): void {
    const waiting = all.filter((e) => e.value.state === 'pending' && now < e.value.expiresAt);
    if (waiting.filter((e) => (e.value.source ?? '') === source).length >= perSource) {
      throw fail('RATE_LIMITED', `${perSource} CLI logins from your address are already waiting for their browser sign-in. Finish or cancel one, or try again when they expire (${Math.round(this.limits.ttlMs / 60_000)} minutes after their start).`);
    }
    if (waiting.length >= this.limits.maxPending) {
      throw fail('RATE_LIMITED', 'Too many CLI logins are waiting for their browser sign-in right now. Try again in a few minutes.');
    }
  }

  /** A login by id (also ended ones, for a while); undefined when unknown, forgotten or not a login id. One read. */
  async get(id: string): Promise<CliLogin | undefined> {
    return LOGIN_ID.test(id) ? this.metadata.get(cliLogins, id) : undefined;
  }

  /** True when the login can no longer be answered or claimed because its time ran out. */
  expired(login: CliLogin): boolean {
    return expiredAt(login, this.clock.now());
  }

  /**
   * Answers a login in the browser (after sign-in) in one transaction, and wakes the polls
   * waiting on this node (those on other nodes see it at their next re-read).
   * @returns 'ok', or why not: 'expired', 'answered' (already approved, denied or delivered), 'unknown'.
   */
  async decide(id: string, accountId: string, approve: boolean): Promise<CliLoginDecision> {
    if (!LOGIN_ID.test(id)) return 'unknown';
    const now = this.clock.now();
    const result = await this.metadata.transact(async (tx): Promise<CliLoginDecision> => {
      const login = await tx.get(cliLogins, id);
      if (!login) return 'unknown';
      if (expiredAt(login, now)) return 'expired';
      if (login.state !== 'pending') return 'answered';
      tx.put(cliLogins, id, { ...login, state: approve ? 'approved' : 'denied', accountId });
      return 'ok';
    });
    if (result === 'ok') this.#wake(id);
    return result;
  }

  /**
   * What a poll presenting `token` gets. An approved login moves to `delivered` in the same
   * transaction that finds it approved, so exactly one poll, cluster-wide, is ever told
   * `approved`. Other outcomes are one read, no transaction.
   */
  async claim(id: string, token: string): Promise<CliLoginClaim> {
    const seen = await this.get(id);
    const now = this.clock.now();
    const judge = (login: CliLogin | undefined): CliLoginClaim | null => {
      if (!login) return { kind: 'unknown' };
      if (!secretMatches(token, login.tokenHash)) return { kind: 'bad-token' };
      if (expiredAt(login, now)) return { kind: 'expired' };
      switch (login.state) {
        case 'pending': return { kind: 'pending' };
        case 'denied': return { kind: 'denied' };
        case 'delivered': return { kind: 'used' };
        case 'approved': return null;
      }
    };
    const first = judge(seen);
    if (first) return first;
    return this.metadata.transact(async (tx): Promise<CliLoginClaim> => {
      const login = await tx.get(cliLogins, id);
      const again = judge(login);
      if (again) return again;
      const delivered: CliLoginRecord = { ...login!, state: 'delivered' };
      tx.put(cliLogins, id, delivered);
      return { kind: 'approved', login: delivered, accountId: delivered.accountId! };
    });
  }

  /**
   * Resolves when the login is answered through this node, or after `ms` (never rejects); the
   * caller re-reads the store then (`claim`). The timer does not keep the process alive.
   */
  waitForAnswer(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.#waiters.get(id);
      if (!set) this.#waiters.set(id, (set = new Set()));
      const waiters = set;
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.#waiters.get(id) === waiters) this.#waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      timer.unref();
      waiters.add(done);
    });
  }

  /** Forgets logins ended more than `CLI_LOGIN_MEMORY_MS` ago. @returns how many. */
  async prune(): Promise<number> {
    const now = this.clock.now();
    return pruneKeyspace(this.metadata, cliLogins, (l) => forgettable(l, now));
  }

  #wake(id: string): void {
    const set = this.#waiters.get(id);
    if (!set) return;
    for (const w of [...set]) w();
  }
}
