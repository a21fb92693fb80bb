/**
 * The blobs domain's schema migrations (run by engine/migrations.ts inside its one transaction).
 */
import type { MetadataTransaction } from '../storage/metadata.js';
import { meta } from '../storage/meta-keyspace.js';

/** Meta key set by the schema 6 migration while blobs of older builds await verification. */
export const LEGACY_CHECK_KEY = 'blobs-to-verify';

/** Schema 6: blobs written by older builds are verified once at start-up (quarantine.ts). */
export function markLegacyBlobsForVerification(tx: MetadataTransaction): void {
  tx.put(meta, LEGACY_CHECK_KEY, true);
}
