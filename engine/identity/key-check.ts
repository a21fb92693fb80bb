/**
 * Keeps every node of a cluster on one server key (engine/identity/keys.ts). The metadata store
 * holds the key's fingerprint (keyspace `server-key`); every start compares its own:
 *
 * - no record: the first start of the installation (or of a build that records it) writes it;
 * - the same fingerprint: the node starts;
 * - the record's fingerprint is this node's *accepted* key: a rotation; the record moves to the
 *   new key, remembers the old one as `previous`, and `resealed` turns false until
 *   `resealSecrets` has moved every sealed second-factor secret to the new key;
 * - anything else: the node refuses to start (`ServerKeyMismatchError`), naming the settings,
 *   rather than mint registry tokens, upload capabilities and CSRF tokens the other nodes reject
 *   and seal secrets they cannot open. A node whose signing key is the cluster's *previous* key
 *   (rotation half done and this node not yet moved) is refused the same way, so a rotation
 *   never flips back.
 *
 * A node started without an accepted key while `resealed` is false is refused too: some account
 * may still have its secret sealed under the previous key only.
 */
import type { Keyspace, MetadataStore } from '../storage/metadata.js';
import { scanKeyspace } from '../storage/scan.js';
import type { ServerKeys } from './keys.js';
import type { Account, ServerKeyRecord } from './records.js';
import { accounts, serverKey } from './keyspaces.js';

const RECORD = 'current';

/** A node's key differs from the cluster's; the message names the settings to fix. */
export class ServerKeyMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerKeyMismatchError';
  }
}

/** What a start found: first record, same key, or a rotation it recorded. */
export type ServerKeyCheck = 'recorded' | 'same' | 'rotated';

/** A fingerprint shortened for messages and logs. */
const short = (fp: string | null) => (fp ? fp.slice(0, 12) : 'none');

/**
 * Compares `keys` with the cluster's recorded key and records a first start or a rotation (one
 * transaction; see the top of this file).
 * @param now ms since epoch
 * @throws ServerKeyMismatchError when this node must not start with these keys.
 */
export async function checkServerKey(metadata: MetadataStore, keys: ServerKeys, now: number): Promise<ServerKeyCheck> {
  const mine = keys.fingerprint();
  const accepted = keys.acceptedFingerprint();
  return metadata.transact(async (tx): Promise<ServerKeyCheck> => {
    const rec = await tx.get(serverKey, RECORD);
    if (!rec) {
      tx.put(serverKey, RECORD, { fingerprint: mine, previous: null, resealed: true, updatedAt: now });
      return 'recorded';
    }
    if (rec.fingerprint === mine) {
      if (!rec.resealed && accepted === null) {
        throw new ServerKeyMismatchError(
          'second-factor secrets sealed under the previous server key are still being re-sealed under the current one: ' +
          'keep the previous key as SLIPWAY_ACCEPTED_SERVER_KEY (or SLIPWAY_ACCEPTED_KEY_FILE) until a node logs "second-factor secrets re-sealed" (docs/cluster.md)');
      }
      return 'same';
    }
    if (accepted !== null && rec.fingerprint === accepted && rec.previous !== mine) {
      tx.put(serverKey, RECORD, { fingerprint: mine, previous: accepted, resealed: false, updatedAt: now });
      return 'rotated';
    }
    const behind = rec.previous === mine
      ? ' This node\'s key is the one the cluster rotated away from: start it with the new key as SLIPWAY_SERVER_KEY and the old one as SLIPWAY_ACCEPTED_SERVER_KEY.'
      : '';
    throw new ServerKeyMismatchError(
      `this node's server key (fingerprint ${short(mine)}, from SLIPWAY_SERVER_KEY, SLIPWAY_KEY_FILE or <data>/keys/server.key) ` +
      `differs from the key the cluster's metadata store records (fingerprint ${short(rec.fingerprint)}): ` +
      `every node must be given the same key; to rotate, see docs/cluster.md "Shared secrets and rotation".${behind}`);
  });
}

/**
 * Records `keys` as the cluster's key whatever was recorded before: the way out when the key was
 * lost (`slipway key adopt`). Second-factor secrets sealed under the lost key stay unopenable,
 * and everything signed with it stays invalid.
 * @param now ms since epoch
 * @returns the fingerprint that was recorded before, or null.
 */
export async function adoptServerKey(metadata: MetadataStore, keys: ServerKeys, now: number): Promise<string | null> {
  return metadata.transact(async (tx) => {
    const before = await tx.get(serverKey, RECORD);
    tx.put(serverKey, RECORD, { fingerprint: keys.fingerprint(), previous: null, resealed: true, updatedAt: now });
    return before?.fingerprint ?? null;
  });
}

/** Accounts re-sealed per transaction. */
const RESEAL_PAGE = 100;

/**
 * Where a domain keeps values sealed with `ServerKeys.seal`, for `resealSecrets`: the keyspace,
 * a record's sealed values (null where it has none) and the record with them re-sealed.
 */
export interface SealedValues<V> {
  ks: Keyspace<V>;
  sealed(v: V): Array<string | null>;
  resealed(v: V, reseal: (sealed: string) => string): V;
}

/** Second-factor (TOTP) secrets of accounts. */
const TOTP_SECRETS: SealedValues<Account> = {
  ks: accounts,
  sealed: (a) => [a.totpSecretSealed],
  resealed: (a, reseal) => ({ ...a, totpSecretSealed: reseal(a.totpSecretSealed) }),
};

/**
 * Re-seals every sealed value that does not open with the signing key (it was sealed under the
 * accepted key): accounts' second-factor secrets and those of `more` (app webhooks' signing
 * secrets and authorization values: engine/webhooks/reseal.ts), page by page in transactions
 * that re-read each record, then marks the record `resealed`. Only towards the cluster's key: each transaction re-reads the
 * record and does nothing unless the cluster signs with this node's key, so a node that merely
 * accepts the next key (rotation step 1) never re-seals back to the old one. Idempotent; safe to
 * run on several nodes at once and against concurrent account changes. Does nothing when this
 * node has no accepted key.
 * @param now ms since epoch
 * @returns how many secrets were re-sealed.
 * @throws Error when a secret opens with neither key (sealed under a key this node does not have).
 */
export async function resealSecrets(metadata: MetadataStore, keys: ServerKeys, now: number, more: ReadonlyArray<SealedValues<any>> = []): Promise<number> {
  const mine = keys.fingerprint();
  if (keys.acceptedFingerprint() === null || (await metadata.get(serverKey, RECORD))?.fingerprint !== mine) return 0;
  let resealed = 0;
  for (const values of [TOTP_SECRETS, ...more]) resealed += await resealAll(metadata, keys, mine, values);
  await metadata.transact(async (tx) => {
    const rec: ServerKeyRecord | undefined = await tx.get(serverKey, RECORD);
    if (rec && rec.fingerprint === mine && !rec.resealed) tx.put(serverKey, RECORD, { ...rec, resealed: true, updatedAt: now });
  });
  return resealed;
}

/** True when every sealed value of `v` opens with the signing key. */
function current<V>(keys: ServerKeys, values: SealedValues<V>, v: V): boolean {
  return values.sealed(v).every((s) => s === null || keys.sealedWithCurrent(s));
}

/** `resealSecrets` for one keyspace: its stale records, RESEAL_PAGE per transaction. */
async function resealAll<V>(metadata: MetadataStore, keys: ServerKeys, mine: string, values: SealedValues<V>): Promise<number> {
  let resealed = 0;
  let stale: string[] = [];
  const flush = async () => {
    const ids = stale;
    stale = [];
    resealed += await metadata.transact(async (tx) => {
      let n = 0;
      if ((await tx.get(serverKey, RECORD))?.fingerprint !== mine) return 0;
      for (const id of ids) {
        const v = await tx.get(values.ks, id);
        if (v === undefined || current(keys, values, v)) continue;
        tx.put(values.ks, id, values.resealed(v, (s) => (keys.sealedWithCurrent(s) ? s : keys.seal(keys.unseal(s)))));
        n++;
      }
      return n;
    });
  };
  for await (const e of scanKeyspace(metadata, values.ks)) {
    if (current(keys, values, e.value)) continue;
    stale.push(e.key);
    if (stale.length >= RESEAL_PAGE) await flush();
  }
  if (stale.length > 0) await flush();
  return resealed;
}
