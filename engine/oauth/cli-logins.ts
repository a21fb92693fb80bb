/**
 * Browser logins of the platform CLI (`heroku login`), in the shape of the OAuth 2.0 device
 * authorization grant (RFC 8628): the CLI starts a login and gets a random id plus a polling
 * token; a person signs in on the auth host (password and TOTP) and approves or denies the login
 * in the browser; the CLI's poll then receives one access token, exactly once.
 *
 * Logins live in memory only (they last minutes; a restart ends them, and the CLI is told to
 * start again). The polling token is kept only as its sha256. The access token is not made at
 * approval but by the one poll that claims the approved login (`claim` is synchronous, so two
 * polls can never both win), so no token value is ever held waiting for a poll.
 *
 * Being in memory, a login is known only to the process that started it: behind a load
 * balancer over several processes, the browser and the polls must reach that process. Moving
 * logins into the metadata store (an oauth keyspace, `decide`/`claim` each one transaction,
 * waiting polls woken by a store notification) is left for the cluster work.
 */
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { hashToken, newSecret, secretMatches } from '../identity/tokens.js';
import { CLI_LOGIN_MAX_PENDING, CLI_LOGIN_MEMORY_MS, CLI_LOGIN_TTL_MS } from './limits.js';

/** Where a login stands: waiting for the browser, answered there, or its token handed out. */
export type CliLoginState = 'pending' | 'approved' | 'denied' | 'delivered';

/** One CLI login. */
export interface CliLogin {
  /** Random 256-bit id (base64url), part of the browser and poll URLs. */
  readonly id: string;
  /** sha256 hex of the polling token. */
  readonly tokenHash: string;
  /** What the CLI said it is, e.g. "Heroku CLI login from build-host" (shown on the confirmation page). */
  readonly description: string;
  /** ms since epoch. */
  readonly createdAt: number;
  readonly expiresAt: number;
  state: CliLoginState;
  /** The account that answered in the browser; null while pending. */
  accountId: string | null;
}

/** What a poll finds. `approved`: the caller now owns the one delivery for `accountId`. */
export type CliLoginClaim =
  | { kind: 'approved'; login: CliLogin; accountId: string }
  | { kind: 'pending' | 'denied' | 'expired' | 'used' | 'unknown' | 'bad-token' };

/** The result of answering a login in the browser. */
export type CliLoginDecision = 'ok' | 'expired' | 'answered' | 'unknown';

export interface CliLoginLimits {
  /** How long a login may wait for its answer, ms. */
  ttlMs: number;
  /** Most logins in progress at once. */
  maxPending: number;
}

/** Longest description kept, characters (the CLI sends "Heroku CLI login from <hostname>"). */
export const MAX_CLI_LOGIN_DESCRIPTION = 200;

export class CliLogins {
  readonly #logins = new Map<string, CliLogin>();
  readonly #waiters = new Map<string, Set<() => void>>();

  constructor(readonly clock: Clock, readonly limits: CliLoginLimits = { ttlMs: CLI_LOGIN_TTL_MS, maxPending: CLI_LOGIN_MAX_PENDING }) {}

  /**
   * Starts a login.
   * @param description free text from the CLI; trimmed and cut to `MAX_CLI_LOGIN_DESCRIPTION`
   * @returns the login and its polling token (shown once; only its hash is kept)
   * @throws RATE_LIMITED when `maxPending` logins are already waiting.
   */
  start(description: string): { login: CliLogin; token: string } {
    const now = this.clock.now();
    this.prune();
    let live = 0;
    for (const l of this.#logins.values()) if (l.state === 'pending' && now < l.expiresAt) live++;
    if (live >= this.limits.maxPending) {
      throw fail('RATE_LIMITED', 'Too many CLI logins are waiting for their browser sign-in right now. Try again in a few minutes.');
    }
    const token = newSecret();
    const cleaned = description.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim().slice(0, MAX_CLI_LOGIN_DESCRIPTION);
    const login: CliLogin = {
      id: newSecret(), tokenHash: hashToken(token), description: cleaned || 'Platform CLI login',
      createdAt: now, expiresAt: now + this.limits.ttlMs, state: 'pending', accountId: null,
    };
    this.#logins.set(login.id, login);
    return { login, token };
  }

  /** A login by id (also ended ones, for a while); undefined when unknown or forgotten. */
  get(id: string): CliLogin | undefined {
    return this.#logins.get(id);
  }

  /** True when the login can no longer be answered or claimed because its time ran out. */
  expired(login: CliLogin): boolean {
    return this.clock.now() >= login.expiresAt && (login.state === 'pending' || login.state === 'approved');
  }

  /**
   * Answers a login in the browser (after sign-in) and wakes its waiting polls.
   * @returns 'ok', or why not: 'expired', 'answered' (already approved, denied or delivered), 'unknown'.
   */
  decide(id: string, accountId: string, approve: boolean): CliLoginDecision {
    const login = this.#logins.get(id);
    if (!login) return 'unknown';
    if (this.expired(login)) return 'expired';
    if (login.state !== 'pending') return 'answered';
    login.state = approve ? 'approved' : 'denied';
    login.accountId = accountId;
    this.#wake(id);
    return 'ok';
  }

  /**
   * What a poll presenting `token` gets. An approved login moves to `delivered` in this same
   * synchronous step, so exactly one poll is ever told `approved`.
   */
  claim(id: string, token: string): CliLoginClaim {
    const login = this.#logins.get(id);
    if (!login) return { kind: 'unknown' };
    if (!secretMatches(token, login.tokenHash)) return { kind: 'bad-token' };
    if (this.expired(login)) return { kind: 'expired' };
    switch (login.state) {
      case 'pending': return { kind: 'pending' };
      case 'denied': return { kind: 'denied' };
      case 'delivered': return { kind: 'used' };
      case 'approved':
        login.state = 'delivered';
        return { kind: 'approved', login, accountId: login.accountId! };
    }
  }

  /**
   * Resolves when the login is answered in the browser, or after `ms` (never rejects). The timer
   * does not keep the process alive.
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
  prune(): number {
    const now = this.clock.now();
    let n = 0;
    for (const [id, l] of this.#logins) {
      if (now >= l.expiresAt + CLI_LOGIN_MEMORY_MS) {
        this.#logins.delete(id);
        this.#wake(id);
        n++;
      }
    }
    return n;
  }

  #wake(id: string): void {
    const set = this.#waiters.get(id);
    if (!set) return;
    for (const w of [...set]) w();
  }
}
