/**
 * Publishes `slipway:authorization` events (engine/events.ts) after an authorization was
 * created, regenerated or revoked, once the change is committed. Never carries token values.
 */
import { publishEvent } from '../events.js';
import type { AuthorizationRecord } from '../identity/records.js';

/** Announces a committed change of `a`. */
export function announceAuthorization(action: 'created' | 'regenerated' | 'revoked', a: AuthorizationRecord): void {
  publishEvent('authorization', () => ({
    action, authorizationId: a.id, accountId: a.accountId, teamId: a.teamId, clientId: a.clientId, scopes: [...a.scope],
  }));
}
