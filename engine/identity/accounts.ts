/**
 * Accounts: e-mail, scrypt password hash, sealed TOTP secret and an API key (a global-scope
 * authorization created with the account, docs/rules.md Authentication 10). The API key is returned
 * only by `create` and never stored in clear.
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import type { Account } from './records.js';
import { hashPassword, newPassword } from './passwords.js';
import { newId } from './tokens.js';
import { newTotpSecret } from './totp.js';
import type { ServerKeys } from './keys.js';
import { createAuthorizationInTransaction, regenerateTokensInTransaction } from './authorizations.js';
import { checkIdentifier } from '../identifiers.js';
import { accounts, accountsByEmail, authorizations } from './keyspaces.js';

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

/** The accounts service: reads are one `get` per record outside any transaction. */
export class Accounts {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly keys: ServerKeys) {}

  /**
   * Creates an account with an API key. `opts.operator` marks the operator account created at
   * first start (it alone may mark OAuth clients trusted); `opts.credentialsPending` marks its
   * credentials as not delivered yet (engine/identity/operator.ts).
   * @throws INVALID_PARAMS for a malformed e-mail or a password under 8 characters;
   *         CONFLICT when the e-mail is taken.
   */
  async create(email: string, password?: string, opts: { operator?: boolean; credentialsPending?: boolean } = {}): Promise<CreatedAccount> {
    const normalized = normalizeEmail(email);
    if (!EMAIL.test(normalized)) throw fail('INVALID_PARAMS', `"${email}" is not a valid e-mail address`);
    if (password !== undefined && password.length < 8) throw fail('INVALID_PARAMS', 'password must be at least 8 characters');
    const generatedPassword = password === undefined ? newPassword() : null;
    const passwordHash = await hashPassword(password ?? generatedPassword!);
    const totpSecret = newTotpSecret();
    const now = this.clock.now();
    const id = newId();
    const sealed = this.keys.seal(totpSecret);
    const { account, apiKey } = await this.metadata.transact(async (tx) => {
      if ((await tx.get(accountsByEmail, normalized)) !== undefined) throw fail('CONFLICT', `an account with e-mail ${normalized} already exists`);
      const issued = createAuthorizationInTransaction(tx, {
        kind: 'api-key', accountId: id, description: 'API key', scope: ['global'], accessTokenTtlMs: null, withRefreshToken: false,
      }, now);
      const record: Account = {
        id, email: normalized, name: null, passwordHash, totpSecretSealed: sealed,
        apiKeyAuthorizationId: issued.record.id, createdAt: now, updatedAt: now,
        ...(opts.operator ? { operator: true } : {}),
        ...(opts.credentialsPending ? { credentialsPending: true } : {}),
      };
      tx.put(accounts, id, record);
      tx.put(accountsByEmail, normalized, id);
      return { account: record, apiKey: issued.accessToken.token };
    });
    return { account, apiKey, generatedPassword, totpSecret };
  }

  /**
   * New credentials for account `id`: a generated password, a new second-factor secret and a new
   * value of its API key (the old value fails from now on; the account's other authorizations are
   * kept). The account's `credentialsPending` mark is left as it was.
   * @throws NOT_FOUND when there is no such account.
   */
  async reissue(id: string): Promise<CreatedAccount> {
    const generatedPassword = newPassword();
    const passwordHash = await hashPassword(generatedPassword);
    const totpSecret = newTotpSecret();
    const sealed = this.keys.seal(totpSecret);
    const now = this.clock.now();
    return this.metadata.transact(async (tx) => {
      const current = await tx.get(accounts, id);
      if (!current) throw fail('NOT_FOUND', `no account ${id}`, { resource: 'account' });
      const apiKey = await tx.get(authorizations, current.apiKeyAuthorizationId);
      if (!apiKey) throw fail('NOT_FOUND', `account ${id} has no API key authorization`, { resource: 'authorization' });
      const issued = await regenerateTokensInTransaction(tx, apiKey, now);
      const account: Account = { ...current, passwordHash, totpSecretSealed: sealed, updatedAt: now };
      tx.put(accounts, id, account);
      return { account, apiKey: issued.accessToken.token, generatedPassword, totpSecret };
    });
  }

  /** Clears account `id`'s `credentialsPending` mark (its credentials were delivered). */
  async settleCredentials(id: string): Promise<void> {
    await this.metadata.transact(async (tx) => {
      const current = await tx.get(accounts, id);
      if (!current?.credentialsPending) return;
      const { credentialsPending: _, ...settled } = current;
      tx.put(accounts, id, { ...settled, updatedAt: this.clock.now() });
    });
  }

  /**
   * The account `id`, or undefined.
   * @throws INVALID_PARAMS when `id` is over its length limit (engine/identifiers.ts).
   */
  async get(id: string): Promise<Account | undefined> {
    return this.metadata.get(accounts, checkIdentifier('account', id));
  }

  /**
   * The account with e-mail `email` (compared normalised), or undefined.
   * @throws INVALID_PARAMS when the e-mail is over its length limit.
   */
  async byEmail(email: string): Promise<Account | undefined> {
    const id = await this.metadata.get(accountsByEmail, normalizeEmail(email));
    return id === undefined ? undefined : this.metadata.get(accounts, id);
  }

  /** True when no account exists yet (first start). */
  async isEmpty(): Promise<boolean> {
    return (await this.metadata.range(accounts, { limit: 1 })).length === 0;
  }

  /** The account's TOTP secret in clear (for the sign-in check). */
  totpSecretOf(account: Account): string {
    return this.keys.unseal(account.totpSecretSealed);
  }
}
