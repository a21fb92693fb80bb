/**
 * The `registry-notification` subscriber source of the delivery engine (engine/webhooks/sources.ts):
 * the operator's endpoints (endpoints.ts) subscribe to the registry's notification events, each
 * endpoint to the events it does not ignore. Every attempt POSTs distribution's envelope of those
 * events (the same event ids each time) with the endpoint's headers, taken from the configuration
 * at the attempt: header values are never written to the store.
 *
 * Per endpoint, as distribution's endpoint settings say: the attempt's `timeout` (at most the
 * worker's), and the retries: `threshold` failed attempts retried `backoff` apart, then the wait
 * doubles per failure, up to 5 minutes (or `backoff`, when longer), until the engine's horizon.
 * An endpoint is the operator's, not a tenant's, so the webhook destination policy
 * (SLIPWAY_WEBHOOK_ALLOWED_HOSTS) does not apply to it: its host is allowed as configured.
 */
import type { DeliveryRecord, EventRecord } from '../webhooks/records.js';
import type { OutboundRequest, Subscriber, SubscriberSource } from '../webhooks/sources.js';
import type { RetryPolicy } from '../webhooks/deliveries.js';
import { hostAndPort, parseAllowedHosts, type AllowedHosts } from '../webhooks/destination.js';
import { EVENTS_MEDIA_TYPE, type DistributionEvent, type Envelope } from './envelope.js';
import { wantsEvent, type NotificationEndpoint } from './endpoints.js';

/** The webhook event entity of registry notifications (`data` is an Envelope). */
export const NOTIFICATION_ENTITY = 'registry:notification';
/** The kind of this source, recorded in each delivery. */
export const NOTIFICATION_SOURCE = 'registry-notification';
/** Longest wait between two attempts of a notification, unless `backoff` is longer (ms). */
export const NOTIFICATION_RETRY_CAP_MS = 5 * 60_000;

/** The delivery group of an endpoint's deliveries (its concurrency and listing group). */
export function endpointGroup(name: string): string {
  return `${NOTIFICATION_SOURCE}:${name}`;
}

export class NotificationSource implements SubscriberSource {
  readonly kind = NOTIFICATION_SOURCE;
  readonly #byName: ReadonlyMap<string, { endpoint: NotificationEndpoint; allowed: AllowedHosts }>;

  constructor(readonly endpoints: readonly NotificationEndpoint[]) {
    this.#byName = new Map(endpoints.map((e) => {
      const { host, port } = hostAndPort(new URL(e.url));
      return [e.name, { endpoint: e, allowed: parseAllowedHosts(host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`) }];
    }));
  }

  /** Every endpoint that wants at least one of the envelope's events (none for other entities). */
  subscribers(_reader: unknown, event: EventRecord): Subscriber[] {
    if (event.entity !== NOTIFICATION_ENTITY) return [];
    const { events } = event.data as Envelope;
    return this.endpoints.filter((e) => events.some((ev) => wantsEvent(e, ev))).map((e) => ({ id: e.name, level: 'sync', group: endpointGroup(e.name) }));
  }

  /** The POST of distribution's envelope of the events `delivery`'s endpoint wants; null when it is no longer configured. */
  async request(event: EventRecord, delivery: DeliveryRecord): Promise<OutboundRequest | null> {
    const found = this.#byName.get(delivery.subscriberId);
    if (!found) return null;
    const { endpoint, allowed } = found;
    const events = (event.data as Envelope).events.filter((e: DistributionEvent) => wantsEvent(endpoint, e));
    const headers: Record<string, string> = { 'Content-Type': EVENTS_MEDIA_TYPE };
    for (const [name, values] of Object.entries(endpoint.headers)) headers[name] = values.join(', ');
    return { url: endpoint.url, headers, body: JSON.stringify({ events }), timeoutMs: endpoint.timeoutMs, allowed };
  }

  /** `threshold` retries `backoff` apart, then doubling, capped (see the top of the file); the worker's horizon. */
  retryPolicy(delivery: DeliveryRecord, policy: RetryPolicy): RetryPolicy {
    const endpoint = this.#byName.get(delivery.subscriberId)?.endpoint;
    if (!endpoint) return policy;
    return { ...policy, baseMs: endpoint.backoffMs, capMs: Math.max(endpoint.backoffMs, NOTIFICATION_RETRY_CAP_MS), steady: endpoint.threshold };
  }
}
