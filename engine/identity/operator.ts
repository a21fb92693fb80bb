/**
 * The operator account: created at the first start on an empty store, the one account that may
 * mark OAuth clients trusted. Its credentials (a generated password, a second-factor secret and
 * an API key) exist in clear only at the moment they are issued, so issuing them and delivering
 * them (the server writes them to a file; server/ops/operator-credentials.ts) are one step that
 * a failed start cannot split: the account is created marked `credentialsPending`, the mark is
 * cleared only once the delivery succeeded, and a start that finds the mark issues the
 * credentials again. `slipway operator reset-credentials` issues new ones at any time.
 */
import type { Account } from './records.js';
import type { Accounts, CreatedAccount } from './accounts.js';
import { runWhenExclusive } from '../storage/metadata.js';
import { accounts as accountsKs } from './keyspaces.js';

/** E-mail of the operator account created at first start. */
export const OPERATOR_EMAIL = 'operator@slipway.local';

/** Accounts read per page while looking for the operator. */
const PAGE = 500;

/**
 * The operator account (`operator: true`), or undefined when the store has none (its accounts
 * were all created with `slipway account create` before any first start). Looks the operator's
 * e-mail up first, then reads every account: for the operator command, not a request path.
 */
export async function findOperator(accounts: Accounts): Promise<Account | undefined> {
  const byEmail = await accounts.byEmail(OPERATOR_EMAIL);
  if (byEmail?.operator) return byEmail;
  let start: string | undefined;
  for (;;) {
    const page = await accounts.metadata.range(accountsKs, { limit: PAGE, ...(start === undefined ? {} : { start }) });
    const hit = page.find((e) => e.key !== start && e.value.operator);
    if (hit) return hit.value;
    if (page.length < PAGE) return undefined;
    start = page[page.length - 1]!.key;
  }
}

/**
 * The first-start bootstrap, safe to run at every start and on several nodes at once: under the
 * cluster-wide `bootstrap` lock, creates the operator account when the store has no account, or
 * issues new credentials to an operator whose credentials were never delivered (an earlier start
 * failed between the two); then `deliver`s them and clears the mark. When `deliver` throws, the
 * mark stays and the next start completes the bootstrap.
 * @returns the credentials this call issued and delivered, or null when there was nothing to do.
 * @throws what `deliver` throws; StoreUnavailableError from the store.
 */
export async function bootstrapOperator(accounts: Accounts, deliver: (issued: CreatedAccount) => Promise<void>): Promise<CreatedAccount | null> {
  return runWhenExclusive(accounts.metadata, 'bootstrap', async () => {
    let issued: CreatedAccount | null = null;
    if (await accounts.isEmpty()) {
      issued = await accounts.create(OPERATOR_EMAIL, undefined, { operator: true, credentialsPending: true });
    } else {
      const operator = await accounts.byEmail(OPERATOR_EMAIL);
      if (operator?.operator && operator.credentialsPending) issued = await accounts.reissue(operator.id);
    }
    if (!issued) return null;
    await deliver(issued);
    await accounts.settleCredentials(issued.account.id);
    return { ...issued, account: (await accounts.get(issued.account.id)) ?? issued.account };
  });
}
