/**
 * Registered OAuth clients (docs/rules.md Resources 1; docs/platform-conventions.md 2.4): a UUID id, a name, one
 * redirect URI and a secret shown only at creation and rotation, stored as sha256 (client
 * secrets carry 256 random bits, so a fast hash suffices and the token endpoint stays fast).
 * Deleting a client revokes every authorization issued to it in the same transaction.
 */
import { key, prefixRange, type Store } from '../store.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { hashToken, newId, newSecret, secretMatches } from '../identity/tokens.js';
import { revokeClientAuthorizationsInTransaction } from '../identity/authorizations.js';
import { clients, clientsByOwner } from './keyspaces.js';
import type { ClientRecord } from './records.js';
import { validateRedirectUri } from './redirect-uri.js';
import { MAX_CLIENT_NAME_LENGTH } from './limits.js';
import { announceAuthorization } from './announce.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID-shaped string (record ids). */
export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** A client with its secret in clear: returned by `create` and `rotate` only. */
export interface ClientWithSecret {
  client: ClientRecord;
  secret: string;
}

/** Fields a caller may set. */
export interface ClientFields {
  name?: unknown;
  redirectUri?: unknown;
  trusted?: unknown;
}

function validName(raw: unknown): string {
  if (typeof raw !== 'string' || raw.trim().length === 0) throw fail('INVALID_PARAMS', 'name is required and must be a non-empty string.');
  if (raw.length > MAX_CLIENT_NAME_LENGTH) throw fail('INVALID_PARAMS', `name is longer than ${MAX_CLIENT_NAME_LENGTH} characters.`);
  return raw.trim();
}

function validTrusted(raw: unknown): boolean {
  if (typeof raw !== 'boolean') throw fail('INVALID_PARAMS', 'trusted must be true or false.');
  return raw;
}

export class Clients {
  constructor(readonly store: Store, readonly clock: Clock) {}

  /**
   * Registers a client owned by `ownerId`.
   * @throws INVALID_PARAMS for a missing or malformed name or redirect URI.
   */
  async create(ownerId: string, fields: ClientFields): Promise<ClientWithSecret> {
    const name = validName(fields.name);
    const redirectUri = validateRedirectUri(fields.redirectUri);
    const trusted = fields.trusted === undefined ? false : validTrusted(fields.trusted);
    const now = this.clock.now();
    const secret = newSecret();
    const client: ClientRecord = { id: newId(), name, redirectUri, secretHash: hashToken(secret), trusted, ownerId, createdAt: now, updatedAt: now };
    await this.store.env.transaction(() => {
      this.store.clients.put(client.id, client);
      this.store.clientsByOwner.put(key(ownerId, client.id), now);
    });
    return { client, secret };
  }

  /** The client with this id; undefined for unknown or malformed ids. Single LMDB read. */
  get(id: string): ClientRecord | undefined {
    return isUuid(id) ? this.store.clients.get(id.toLowerCase()) : undefined;
  }

  /** Clients registered by `ownerId`, in id order. */
  ownedBy(ownerId: string): ClientRecord[] {
    const out: ClientRecord[] = [];
    for (const { key: k } of this.store.clientsByOwner.getRange(prefixRange(ownerId))) {
      const c = this.store.clients.get(k.slice(ownerId.length + 1));
      if (c) out.push(c);
    }
    return out;
  }

  /**
   * Changes name, redirect URI and/or trusted flag.
   * @throws INVALID_PARAMS for a malformed value.
   */
  async update(client: ClientRecord, fields: ClientFields): Promise<ClientRecord> {
    const next: ClientRecord = { ...client, updatedAt: this.clock.now() };
    if (fields.name !== undefined) next.name = validName(fields.name);
    if (fields.redirectUri !== undefined) next.redirectUri = validateRedirectUri(fields.redirectUri);
    if (fields.trusted !== undefined) next.trusted = validTrusted(fields.trusted);
    await this.store.env.transaction(() => this.store.clients.put(client.id, next));
    return next;
  }

  /** Replaces the secret; the old one fails from this commit on (docs/platform-conventions.md 2.4 rotate-credentials). */
  async rotate(client: ClientRecord): Promise<ClientWithSecret> {
    const secret = newSecret();
    const next: ClientRecord = { ...client, secretHash: hashToken(secret), updatedAt: this.clock.now() };
    await this.store.env.transaction(() => this.store.clients.put(client.id, next));
    return { client: next, secret };
  }

  /**
   * Deletes the client and revokes every authorization issued to it, in one transaction; its
   * pending codes fail because the client is gone.
   * @returns how many authorizations were revoked.
   */
  async remove(client: ClientRecord): Promise<number> {
    const now = this.clock.now();
    const revoked = await this.store.metadata.transact(async (tx) => {
      const out = await revokeClientAuthorizationsInTransaction(tx, client.id, now);
      tx.remove(clients, client.id);
      tx.remove(clientsByOwner, key(client.ownerId, client.id));
      return out;
    });
    for (const a of revoked) announceAuthorization('revoked', a);
    return revoked.length;
  }

  /** True when `secret` is the client's current secret (constant-time compare of hashes). */
  secretMatches(client: ClientRecord, secret: string): boolean {
    return secretMatches(secret, client.secretHash);
  }
}
