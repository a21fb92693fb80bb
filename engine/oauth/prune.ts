/**
 * Deleting records that no longer matter (expired authorization codes, sessions, sign-in
 * bookkeeping) without one transaction over a whole keyspace: the keyspace is scanned outside
 * a transaction, then the stale keys are re-read and deleted in one transaction, so issuing a
 * new record meanwhile never conflicts with the prune.
 */
import type { Keyspace, MetadataStore } from '../storage/metadata.js';

/**
 * Deletes every record of `ks` for which `stale` is true (checked again inside the transaction).
 * @returns how many were deleted.
 */
export async function pruneKeyspace<V>(metadata: MetadataStore, ks: Keyspace<V>, stale: (v: V) => boolean): Promise<number> {
  const candidates = (await metadata.range(ks)).filter((e) => stale(e.value)).map((e) => e.key);
  if (candidates.length === 0) return 0;
  return metadata.transact(async (tx) => {
    let n = 0;
    for (const k of candidates) {
      const v = await tx.get(ks, k);
      if (v !== undefined && stale(v)) {
        tx.remove(ks, k);
        n++;
      }
    }
    return n;
  });
}
