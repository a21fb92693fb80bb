/**
 * The OAuth engine as one object for server/main.ts to build and hand to the API and auth
 * hosts: clients, codes and grants, authorizations, sign-in and its sessions, and the platform
 * CLI's browser logins.
 */
import type { Store } from '../store.js';
import type { Clock } from '../clock.js';
import type { Accounts } from '../identity/accounts.js';
import { Clients } from './clients.js';
import { Grants } from './grants.js';
import { Authorizations } from './authorizations.js';
import { WebSessions } from './web-sessions.js';
import { SignIn } from './sign-in.js';
import { CliLogins } from './cli-logins.js';
import { NO_TEAMS, type TeamDirectory } from './owners.js';

export interface OAuth {
  clients: Clients;
  grants: Grants;
  authorizations: Authorizations;
  sessions: WebSessions;
  signIn: SignIn;
  teams: TeamDirectory;
  /** Browser logins of the platform CLI (in memory). */
  cliLogins: CliLogins;
  /** Deletes expired codes, sessions and sign-in bookkeeping. @returns how many records. */
  prune(): Promise<number>;
}

/** Builds the OAuth engine over one store and clock. */
export function createOAuth(store: Store, clock: Clock, accounts: Accounts, teams: TeamDirectory = NO_TEAMS): OAuth {
  const clients = new Clients(store, clock);
  const grants = new Grants(store, clock, clients);
  const sessions = new WebSessions(store, clock);
  const signIn = new SignIn(store, clock, accounts);
  const cliLogins = new CliLogins(clock);
  return {
    clients, grants, sessions, signIn, teams, cliLogins,
    authorizations: new Authorizations(store.metadata, clock),
    async prune() {
      return (await grants.prune()) + (await sessions.prune()) + (await signIn.prune()) + cliLogins.prune();
    },
  };
}
