/**
 * The oauth domain's schema migrations (run by engine/migrations.ts inside its one transaction).
 */
import { keyspace, type MetadataTransaction } from '../storage/metadata.js';
import type { AuthorizationCodeRecord } from './records.js';
import { authorizationCodes } from './keyspaces.js';

/**
 * Legacy (schemas 1-6): the keyspace that held authorization codes under the name `grants`.
 * Only the schema-7 migration reads it; nothing writes it any more.
 */
const legacyGrants = keyspace<AuthorizationCodeRecord>('oauth', 'grants');

/**
 * Schema 7: moves every authorization code record from the legacy `grants` keyspace to
 * `authorization-codes` (same key, same value), so codes outstanding at the upgrade still
 * exchange and used ones still reveal replays.
 * @returns the number of records moved.
 */
export async function moveAuthorizationCodes(tx: MetadataTransaction): Promise<number> {
  const all = await tx.range(legacyGrants);
  for (const { key, value } of all) {
    tx.put(authorizationCodes, key, value);
    tx.remove(legacyGrants, key);
  }
  return all.length;
}
