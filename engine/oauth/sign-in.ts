/**
 * Sign-in on the auth host: e-mail, password and TOTP code, all three required (the second
 * factor is mandatory, docs/rules.md Authentication 4). Passwords are checked with scrypt in libuv's
 * thread pool (engine/identity/passwords.ts), never on the event loop.
 *
 * Lockout (our decision, docs/user-guide.md "Platform API and OAuth"): after `SIGN_IN_MAX_FAILURES` (5)
 * consecutive failures for one e-mail address, sign-in for that address is refused for
 * `SIGN_IN_LOCKOUT_MS` (15 minutes), and the page says so and until when. Failures are counted
 * per address whether or not an account exists, so the lockout reveals nothing about which
 * addresses are registered; during a lockout the password is not even checked. A failure count
 * untouched for `FAILURE_MEMORY_MS` (1 hour) is forgotten. API tokens are not affected.
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import type { Accounts } from '../identity/accounts.js';
import { normalizeEmail } from '../identity/accounts.js';
import type { Account } from '../identity/records.js';
import { hashPassword, verifyPassword } from '../identity/passwords.js';
import { verifyTotp } from '../identity/totp.js';
import type { SignInState } from './records.js';
import { signIns } from './keyspaces.js';
import { SIGN_IN_LOCKOUT_MS, SIGN_IN_MAX_FAILURES } from './limits.js';
import { pruneKeyspace } from './prune.js';

/** A failure count untouched this long is forgotten (1 hour). */
export const FAILURE_MEMORY_MS = 3600_000;

/** Outcome of a sign-in attempt. */
export type SignInResult =
  | { ok: true; account: Account }
  /** Wrong e-mail, password or code; `attemptsLeft` before the lockout starts. */
  | { ok: false; reason: 'invalid'; attemptsLeft: number }
  /** Refused until `until` (ms since epoch) without checking the credentials. */
  | { ok: false; reason: 'locked'; until: number };

/** The bookkeeping of an address as it counts at `now` (forgotten failures reset). */
function effectiveState(s: SignInState | undefined, now: number): SignInState {
  if (!s) return { failures: 0, lockedUntil: null, lastTotpStep: null, updatedAt: now };
  if (s.lockedUntil === null && now - s.updatedAt >= FAILURE_MEMORY_MS) return { ...s, failures: 0 };
  return s;
}

/** Sign-in with password and TOTP, with per-address lockout, over the metadata store. */
export class SignIn {
  #dummyHash: Promise<string> | null = null;

  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly accounts: Accounts) {}

  /**
   * Checks the three credentials and records the outcome. The password is checked outside any
   * transaction; the lockout, the single use of the TOTP step and the new bookkeeping are
   * decided in one transaction that re-reads the address's state, so two concurrent attempts
   * cannot both use one code or both escape a lockout.
   */
  async attempt(email: string, password: string, code: string): Promise<SignInResult> {
    const address = normalizeEmail(email);
    const before = effectiveState(await this.metadata.get(signIns, address), this.clock.now());
    if (before.lockedUntil !== null && this.clock.now() < before.lockedUntil) return { ok: false, reason: 'locked', until: before.lockedUntil };
    const account = await this.accounts.byEmail(address);
    // Unknown address: spend the same scrypt time so response timing does not reveal it.
    const passwordOk = account
      ? await verifyPassword(password, account.passwordHash)
      : (await verifyPassword(password, await this.#dummy()), false);
    const now = this.clock.now();
    const step = account && passwordOk ? verifyTotp(this.accounts.totpSecretOf(account), code.trim(), now) : null;
    return this.metadata.transact(async (tx): Promise<SignInResult> => {
      const s = effectiveState(await tx.get(signIns, address), now);
      if (s.lockedUntil !== null && now < s.lockedUntil) return { ok: false, reason: 'locked', until: s.lockedUntil };
      const fresh = step !== null && (s.lastTotpStep === null || step > s.lastTotpStep);
      if (account && fresh) {
        tx.put(signIns, address, { failures: 0, lockedUntil: null, lastTotpStep: step, updatedAt: now });
        return { ok: true, account };
      }
      const failures = s.failures + 1;
      if (failures >= SIGN_IN_MAX_FAILURES) {
        const until = now + SIGN_IN_LOCKOUT_MS;
        tx.put(signIns, address, { ...s, failures: 0, lockedUntil: until, updatedAt: now });
        return { ok: false, reason: 'locked', until };
      }
      tx.put(signIns, address, { ...s, failures, lockedUntil: null, updatedAt: now });
      return { ok: false, reason: 'invalid', attemptsLeft: SIGN_IN_MAX_FAILURES - failures };
    });
  }

  /** Deletes bookkeeping that no longer matters (no lockout, failures forgotten, TOTP step long past). @returns how many. */
  async prune(): Promise<number> {
    const now = this.clock.now();
    return pruneKeyspace(this.metadata, signIns, (v) => (v.lockedUntil === null || now >= v.lockedUntil) && now - v.updatedAt >= FAILURE_MEMORY_MS);
  }

  #dummy(): Promise<string> {
    this.#dummyHash ??= hashPassword('slipway-dummy-password');
    return this.#dummyHash;
  }
}
