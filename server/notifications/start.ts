/**
 * Starts registry notifications on a node (docs/notifications.md) when the operator configured
 * endpoints: the recorder the registry engine writes its events through and the pull buffer's
 * flush. The node's delivery worker (engine/webhooks/worker.ts) delivers them: register
 * `notifications.source` with it.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../engine/clock.js';
import type { Store } from '../../engine/store.js';
import type { Registry } from '../../engine/registry/registry.js';
import type { Accounts } from '../../engine/identity/accounts.js';
import type { NotificationEndpoint } from '../../engine/notifications/endpoints.js';
import { RegistryNotifications } from '../../engine/notifications/registry-notifications.js';
import type { Logger } from '../log.js';
import type { DeliveryRecord } from '../../engine/webhooks/records.js';
import { NOTIFICATION_SOURCE } from '../../engine/notifications/source.js';

/** What a node's notifications need. */
export interface NotificationsSetup {
  endpoints: readonly NotificationEndpoint[];
  store: Store;
  clock: Clock;
  registry: Registry;
  accounts: Accounts;
  log: Logger;
  /** This node's name (source.addr is `<node name>:<registry port>`). */
  nodeName: string;
  /** Public URLs, filled once the listeners are bound. */
  urls: { registry: string };
}

/**
 * The node's registry notifications, attached to `registry`; undefined when no endpoint is
 * configured (then nothing is recorded and a pull costs one property check).
 */
export function startNotifications(s: NotificationsSetup): RegistryNotifications | undefined {
  if (s.endpoints.length === 0) return undefined;
  const instanceID = randomUUID();
  const source = { addr: s.nodeName, instanceID };
  const notifications = new RegistryNotifications({
    endpoints: s.endpoints, store: s.store.metadata, clock: s.clock,
    source: () => {
      // The registry's port, once bound (the public URL's, when it names one).
      if (source.addr === s.nodeName && s.urls.registry !== '') {
        const u = new URL(s.urls.registry);
        source.addr = `${s.nodeName}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
      }
      return source;
    },
    registryUrl: () => s.urls.registry,
    actorName: async (id) => (await s.accounts.get(id))?.email,
    onError: (e) => s.log.warn({ err: e }, 'registry notifications: recording pulls failed; kept for the next flush'),
  });
  s.registry.notifications = notifications;
  for (const e of s.endpoints) {
    // Header names only: their values are secrets.
    s.log.info({ endpoint: e.name, url: e.url, headers: Object.keys(e.headers), timeoutMs: e.timeoutMs, ignoredActions: e.ignoredActions, ignoredMediaTypes: e.ignoredMediaTypes }, 'registry notification endpoint configured');
  }
  return notifications;
}

/**
 * Logs a registry notification's failed attempt (warn) and its success after failures (info):
 * the endpoint, status, cause and attempt count, never a header or the body.
 */
export function logOutcome(log: Logger, d: DeliveryRecord): void {
  if (d.source !== NOTIFICATION_SOURCE) return;
  const last = d.attempts[d.attempts.length - 1];
  const fields = { endpoint: d.subscriberId, delivery: d.id, event: d.eventId, status: d.status, attempts: d.numAttempts, code: last?.code ?? null, cause: last?.cause ?? null, detail: last?.detail ?? null };
  if (d.status !== 'succeeded') log.warn(fields, 'registry notification not delivered yet');
  else if (d.numAttempts > 1) log.info(fields, 'registry notification delivered after retries');
}
