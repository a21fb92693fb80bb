/**
 * The store as an operator command sees it: opened from the data directory (or the cluster's
 * database), the server key checked against the installation's, closed when the command is done.
 * Safe while servers run (LMDB is multi-process; PostgreSQL is shared by design).
 */
import { databaseOf, type Config } from '../config.js';
import { openStore } from '../../engine/store.js';
import { ServerKeys } from '../../engine/identity/keys.js';
import { checkServerKey } from '../../engine/identity/key-check.js';
import { Accounts } from '../../engine/identity/accounts.js';
import { Apps } from '../../engine/platform/apps.js';
import { systemClock } from '../../engine/clock.js';

/**
 * Runs `fn` with the accounts and apps services over the configured store, then closes it.
 * @throws what `fn` throws; Error when the configured server key is not the installation's
 *         (engine/identity/key-check.ts); StoreUnavailableError when the database is unreachable.
 */
export async function withAccounts<T>(config: Config, fn: (a: Accounts, apps: Apps) => Promise<T>): Promise<T> {
  const store = await openStore(config.dataDir, databaseOf(config));
  try {
    const keys = ServerKeys.load(config);
    await checkServerKey(store.metadata, keys, systemClock.now());
    return await fn(new Accounts(store.metadata, systemClock, keys), new Apps(store.metadata, systemClock));
  } finally {
    await store.close();
  }
}
