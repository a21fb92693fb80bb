/**
 * Registered OAuth clients (docs/rules.md Resources 1; docs/platform-conventions.md 2.4): a UUID id, a name, one
 * redirect URI and a secret shown only at creation and rotation, stored as sha256 (client
 * secrets carry 256 random bits, so a fast hash suffices and the token endpoint stays fast).
 * Deleting a client revokes every authorization issued to it in the same transaction.
 * Records live in the oauth keyspaces `clients` and `clients-by-owner` (docs/storage.md).
 */
import { key, type MetadataReader, type MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { hashToken, newId, newSecret, secretMatches } from '../identity/tokens.js';
import { revokeClientAuthorizationsInTransaction } from '../identity/authorizations.js';
import type { ClientRecord } from './records.js';
import { clients, clientsByOwner } from './keyspaces.js';
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

/**
 * The OAuth client `id`; undefined for unknown or malformed ids. One read: pass the
 * `MetadataStore` on request paths (e.g. the platform's team third-party check), or a
 * `MetadataTransaction` to see the client's deletion serialized with the caller's change.
 */
export async function findClient(reader: MetadataReader, id: string): Promise<ClientRecord | undefined> {
  return isUuid(id) ? reader.get(clients, id.toLowerCase()) : undefined;
}

/** Registered OAuth clients over the metadata store. */
export class Clients {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

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
    await this.metadata.transact((tx) => {
      tx.put(clients, client.id, client);
      tx.put(clientsByOwner, key(ownerId, client.id), now);
    });
    return { client, secret };
  }

  /** The client with this id; undefined for unknown or malformed ids. One read, no transaction. */
  get(id: string): Promise<ClientRecord | undefined> {
    return findClient(this.metadata, id);
  }

  /** Clients registered by `ownerId`, in id order. */
  async ownedBy(ownerId: string): Promise<ClientRecord[]> {
    const index = await this.metadata.range(clientsByOwner, { prefix: ownerId });
    const found = await Promise.all(index.map(({ key: k }) => this.metadata.get(clients, k.slice(ownerId.length + 1))));
    return found.filter((c): c is ClientRecord => c !== undefined);
  }

  /**
   * Changes name, redirect URI and/or trusted flag (fields not given keep their stored value).
   * @throws INVALID_PARAMS for a malformed value; NOT_FOUND when the client was deleted meanwhile.
   */
  async update(client: ClientRecord, fields: ClientFields): Promise<ClientRecord> {
    const name = fields.name !== undefined ? validName(fields.name) : undefined;
    const redirectUri = fields.redirectUri !== undefined ? validateRedirectUri(fields.redirectUri) : undefined;
    const trusted = fields.trusted !== undefined ? validTrusted(fields.trusted) : undefined;
    const now = this.clock.now();
    return this.#change(client, (current) => ({
      ...current, updatedAt: now,
      ...(name !== undefined ? { name } : {}), ...(redirectUri !== undefined ? { redirectUri } : {}), ...(trusted !== undefined ? { trusted } : {}),
    }));
  }

  /**
   * Replaces the secret; the old one fails from this commit on (docs/platform-conventions.md 2.4 rotate-credentials).
   * @throws NOT_FOUND when the client was deleted meanwhile.
   */
  async rotate(client: ClientRecord): Promise<ClientWithSecret> {
    const secret = newSecret();
    const secretHash = hashToken(secret);
    const now = this.clock.now();
    const next = await this.#change(client, (current) => ({ ...current, secretHash, updatedAt: now }));
    return { client: next, secret };
  }

  /**
   * Deletes the client and revokes every authorization issued to it, in one transaction; its
   * pending codes fail because the client is gone.
   * @returns how many authorizations were revoked.
   */
  async remove(client: ClientRecord): Promise<number> {
    const now = this.clock.now();
    const revoked = await this.metadata.transact(async (tx) => {
      const r = await revokeClientAuthorizationsInTransaction(tx, client.id, now);
      tx.remove(clients, client.id);
      tx.remove(clientsByOwner, key(client.ownerId, client.id));
      return r;
    });
    for (const a of revoked) announceAuthorization('revoked', a);
    return revoked.length;
  }

  /** True when `secret` is the client's current secret (constant-time compare of hashes). */
  secretMatches(client: ClientRecord, secret: string): boolean {
    return secretMatches(secret, client.secretHash);
  }

  /** Read-modify-write of one client record in one transaction. @throws NOT_FOUND when it is gone. */
  async #change(client: ClientRecord, next: (current: ClientRecord) => ClientRecord): Promise<ClientRecord> {
    return this.metadata.transact(async (tx) => {
      const current = await tx.get(clients, client.id);
      if (!current) throw fail('NOT_FOUND', "Couldn't find that OAuth client.", { resource: 'client' });
      const updated = next(current);
      tx.put(clients, client.id, updated);
      return updated;
    });
  }
}
