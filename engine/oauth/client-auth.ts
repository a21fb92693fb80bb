/**
 * Client authentication at the token endpoint (RFC 6749 §2.3.1, §3.2.1). The platform's own
 * form sends only `client_secret` (docs/rules.md Endpoints 2-3): the client is then the one the code or
 * refresh token was issued to. When the client also names itself (`client_id`, or the user
 * part of HTTP Basic), that client is authenticated first and must be the token's client.
 */
import { fail } from '../errors.js';
import type { Clients } from './clients.js';
import type { ClientRecord } from './records.js';

/** Credentials as the token endpoint received them. */
export interface ClientCredentials {
  clientId: string | null;
  secret: string | null;
}

/**
 * Authenticates the client for a grant issued to `issuedTo`.
 * @throws INVALID_CLIENT when the secret is missing or wrong, or the named client is unknown;
 *         INVALID_GRANT when the grant belongs to another client or its client was deleted.
 */
export async function authenticateClientFor(clients: Clients, creds: ClientCredentials, issuedTo: string): Promise<ClientRecord> {
  if (creds.secret === null || creds.secret === '') throw fail('INVALID_CLIENT', 'Client authentication failed: send client_secret in the body or HTTP Basic credentials.');
  if (creds.clientId !== null) {
    const named = await clients.get(creds.clientId);
    if (!named || !clients.secretMatches(named, creds.secret)) throw fail('INVALID_CLIENT', 'Client authentication failed: unknown client or wrong client_secret.');
    if (named.id !== issuedTo) throw fail('INVALID_GRANT', 'The grant was issued to another client.');
    return named;
  }
  const client = await clients.get(issuedTo);
  if (!client) throw fail('INVALID_GRANT', 'The client this grant was issued to no longer exists.');
  if (!clients.secretMatches(client, creds.secret)) throw fail('INVALID_CLIENT', 'Client authentication failed: wrong client_secret.');
  return client;
}
