/**
 * Accounts: e-mail, scrypt password hash, sealed TOTP secret and an API key (a global-scope
 * authorization created with the account, docs/rules.md Authentication 10). The API key is returned
 * only by `create` and never stored in clear.
 */
import type { Store } from '../store.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import type { Account } from './records.js';
import { hashPassword, newPassword } from './passwords.js';
import { newId } from './tokens.js';
import { newTotpSecret } from './totp.js';
import type { ServerKeys } from './keys.js';
import { createAuthorizationInTransaction } from './authorizations.js';
import { checkIdentifier } from '../identifiers.js';

/** Result of creating an account: the only moment its secrets are visible. */
export interface CreatedAccount {
  account: Account;
  apiKey: string;
  /** The password, when generated (not when the caller chose it). */
  generatedPassword: string | null;
  totpSecret: string;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/** Normalised e-mail for look-ups. */
export function normalizeEmail(email: string): string {
  return checkIdentifier('email', email.trim()).toLowerCase();
}

export class Accounts {
  constructor(readonly store: Store, readonly clock: Clock, readonly keys: ServerKeys) {}

  /**
   * Creates an account with an API key. `opts.operator` marks the operator account created at
   * first start (it alone may mark OAuth clients trusted).
   * @throws INVALID_PARAMS for a malformed e-mail or a password under 8 characters;
   *         CONFLICT when the e-mail is taken.
   */
  async create(email: string, password?: string, opts: { operator?: boolean } = {}): Promise<CreatedAccount> {
    const normalized = normalizeEmail(email);
    if (!EMAIL.test(normalized)) throw fail('INVALID_PARAMS', `"${email}" is not a valid e-mail address`);
    if (password !== undefined && password.length < 8) throw fail('INVALID_PARAMS', 'password must be at least 8 characters');
    const generatedPassword = password === undefined ? newPassword() : null;
    const passwordHash = await hashPassword(password ?? generatedPassword!);
    const totpSecret = newTotpSecret();
    const now = this.clock.now();
    const id = newId();
    let apiKey = '';
    let account: Account | undefined;
    await this.store.env.transaction(() => {
      if (this.store.accountsByEmail.get(normalized) !== undefined) throw fail('CONFLICT', `an account with e-mail ${normalized} already exists`);
      const issued = createAuthorizationInTransaction(this.store, {
        kind: 'api-key', accountId: id, description: 'API key', scope: ['global'], accessTokenTtlMs: null, withRefreshToken: false,
      }, now);
      apiKey = issued.accessToken.token;
      account = {
        id, email: normalized, name: null, passwordHash, totpSecretSealed: this.keys.seal(totpSecret),
        apiKeyAuthorizationId: issued.record.id, createdAt: now, updatedAt: now,
        ...(opts.operator ? { operator: true } : {}),
      };
      this.store.accounts.put(id, account);
      this.store.accountsByEmail.put(normalized, id);
    });
    return { account: account!, apiKey, generatedPassword, totpSecret };
  }

  get(id: string): Account | undefined {
    return this.store.accounts.get(checkIdentifier('account', id));
  }

  byEmail(email: string): Account | undefined {
    const id = this.store.accountsByEmail.get(normalizeEmail(email));
    return id === undefined ? undefined : this.store.accounts.get(id);
  }

  /** True when no account exists yet (first start). */
  isEmpty(): boolean {
    return this.store.accounts.getKeysCount() === 0;
  }

  /** The account's TOTP secret in clear (for the sign-in check). */
  totpSecretOf(account: Account): string {
    return this.keys.unseal(account.totpSecretSealed);
  }
}
