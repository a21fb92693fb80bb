/**
 * The OAuth engine as one object for server/main.ts to build and hand to the API and auth
 * hosts: clients, authorization codes, authorizations, sign-in and its sessions, and the platform
 * CLI's browser logins. Everything lives in the metadata store (`store.metadata`,
 * engine/storage/metadata.ts), so every node of a cluster sees the same state.
 */
import type { Store } from '../store.js';
import type { Clock } from '../clock.js';
import type { Accounts } from '../identity/accounts.js';
import { Clients } from './clients.js';
import { AuthorizationCodes } from './authorization-codes.js';
import { Authorizations } from './authorizations.js';
import { WebSessions } from './web-sessions.js';
import { SignIn } from './sign-in.js';
import { CliLogins } from './cli-logins.js';
import { CLI_LOGIN_MAX_PENDING, CLI_LOGIN_TTL_MS } from './limits.js';
import { OnceForms } from './once-forms.js';
import { NO_TEAMS, type TeamDirectory } from './owners.js';

export interface OAuth {
  clients: Clients;
  authorizationCodes: AuthorizationCodes;
  authorizations: Authorizations;
  sessions: WebSessions;
  signIn: SignIn;
  teams: TeamDirectory;
  /** Browser logins of the platform CLI. */
  cliLogins: CliLogins;
  /** Claimed one-time forms of the dashboard. */
  onceForms: OnceForms;
  /** Deletes expired codes, sessions, sign-in bookkeeping, CLI logins and one-time form claims. @returns how many records. */
  prune(): Promise<number>;
}

/**
 * Builds the OAuth engine over one store and clock.
 * @param opts.cliLoginsPerSource most CLI logins waiting at once from one source (default
 *   CLI_LOGIN_MAX_PENDING_PER_SOURCE)
 */
export function createOAuth(store: Store, clock: Clock, accounts: Accounts, teams: TeamDirectory = NO_TEAMS, opts: { cliLoginsPerSource?: number } = {}): OAuth {
  const clients = new Clients(store.metadata, clock);
  const authorizationCodes = new AuthorizationCodes(store.metadata, clock, clients);
  const sessions = new WebSessions(store.metadata, clock);
  const signIn = new SignIn(store.metadata, clock, accounts);
  const cliLogins = new CliLogins(store.metadata, clock, { ttlMs: CLI_LOGIN_TTL_MS, maxPending: CLI_LOGIN_MAX_PENDING, maxPendingPerSource: opts.cliLoginsPerSource });
  const onceForms = new OnceForms(store.metadata, clock);
  return {
    clients, authorizationCodes, sessions, signIn, teams, cliLogins, onceForms,
    authorizations: new Authorizations(store.metadata, clock),
    async prune() {
      return (await authorizationCodes.prune()) + (await sessions.prune()) + (await signIn.prune()) + (await cliLogins.prune()) + (await onceForms.prune());
    },
  };
}
