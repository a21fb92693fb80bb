/**
 * `slipway operator reset-credentials`: new credentials for the operator account, for an
 * operator who lost them (or whose first start never showed them). Run on a host with the
 * installation's settings: its data directory (embedded store) or its database and server key
 * (cluster). The password, second-factor secret and API key value are replaced (the old ones
 * fail at once, on every node); the account's other authorizations stay. The new credentials go
 * where first-start ones go (server/ops/operator-credentials.ts): the 0600 file in this host's
 * data directory, and the screen only when stdout is a terminal.
 */
import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Config } from '../config.js';
import { withAccounts } from './offline.js';
import { findOperator } from '../../engine/identity/operator.js';
import { runWhenExclusive } from '../../engine/storage/metadata.js';
import { systemClock } from '../../engine/clock.js';
import { DATA_DIR_MODE } from '../../engine/data-dir.js';
import { credentialsForTerminal, writeCredentialsFile } from '../ops/operator-credentials.js';

/**
 * Issues and writes the new credentials, then prints where they are (`json`: one JSON object
 * `{account_id, email, credentials_file}`, never the secrets). Returns the exit status.
 * @throws Error when the store has no operator account (installations whose accounts all came
 *         from `slipway account create`); what `withAccounts` throws.
 */
export async function resetOperatorCredentials(config: Config, json: boolean): Promise<number> {
  mkdirSync(config.dataDir, { recursive: true, mode: DATA_DIR_MODE });
  const { issued, file } = await withAccounts(config, async (accounts) => {
    const operator = await findOperator(accounts);
    if (!operator) throw new Error('this installation has no operator account (its accounts were created with `slipway account create`)');
    // Under the bootstrap lock: never interleaved with a first start completing on another node.
    return runWhenExclusive(accounts.metadata, 'bootstrap', async () => {
      const issued = await accounts.reissue(operator.id);
      const file = writeCredentialsFile(config.dataDir, issued, `${hostname()} (slipway operator reset-credentials)`, systemClock.now());
      await accounts.settleCredentials(operator.id);
      return { issued, file };
    });
  });
  if (json) {
    console.log(JSON.stringify({ account_id: issued.account.id, email: issued.account.email, credentials_file: file }));
  } else {
    console.log(`New credentials for ${issued.account.email} written to ${file} (readable by this user only). The old password, second factor and API key no longer work.`);
    if (process.stdout.isTTY) process.stdout.write(credentialsForTerminal(issued, file));
  }
  return 0;
}
