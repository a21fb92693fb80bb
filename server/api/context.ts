/** Everything a platform API handler needs, built once by server/main.ts. */
import type { Store } from '../../engine/store.js';
import type { Clock } from '../../engine/clock.js';
import type { Accounts } from '../../engine/auth/accounts.js';
import type { Apps } from '../../engine/platform/apps.js';
import type { Registry } from '../../engine/registry/registry.js';
import type { Logger } from '../log.js';

export interface ApiContext {
  store: Store;
  clock: Clock;
  accounts: Accounts;
  apps: Apps;
  registry: Registry;
  log: Logger;
  /** `application/vnd.<vendor>+json`. */
  vendor: string;
  urls: { api: string; registry: string; auth: string };
}
