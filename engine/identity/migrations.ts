/**
 * The identity domain's schema migrations (run by engine/migrations.ts inside its one
 * transaction): indexes that older schemas lacked, built from the authorization records.
 */
import { key, type MetadataTransaction } from '../storage/metadata.js';
import { authorizations, authorizationsByAccount, authorizationsByClient, authorizationsByTeam } from './keyspaces.js';

/** An index of authorizations: by account (schema 2), by client (2), by team (3). */
export type AuthorizationIndex = 'account' | 'client' | 'team';

/**
 * Writes the given indexes for every authorization record (the same keys the live writer
 * `indexAuthorizationInTransaction` writes for new records).
 * @returns the number of authorization records indexed.
 */
export async function indexAllAuthorizations(tx: MetadataTransaction, only: readonly AuthorizationIndex[]): Promise<number> {
  const all = await tx.range(authorizations);
  for (const { key: id, value: a } of all) {
    if (only.includes('account')) tx.put(authorizationsByAccount, key(a.accountId, id), a.createdAt);
    if (a.clientId && only.includes('client')) tx.put(authorizationsByClient, key(a.clientId, id), a.createdAt);
    if (a.teamId && only.includes('team')) tx.put(authorizationsByTeam, key(a.teamId, id), a.createdAt);
  }
  return all.length;
}
