/**
 * App webhooks (the platform's app-webhook resource; docs/webhooks.md): per-app subscriptions to
 * entities (`api:release`, …) delivered to an HTTPS URL, signed with HMAC-SHA256 of the body
 * under the webhook's secret (base64, in `Heroku-Webhook-Hmac-SHA256`, as the platform signs).
 * The secret and the optional `Authorization` value are stored sealed (ServerKeys.seal, as
 * second-factor secrets are): signing needs the secret in clear, so a hash would not do. This
 * module is also the `app-webhook` subscriber source of the delivery worker.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { fail } from '../errors.js';
import { key, type MetadataReader, type MetadataStore, type MetadataTransaction } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { newId } from '../identity/tokens.js';
import type { ServerKeys } from '../identity/keys.js';
import { NOTHING_ALLOWED, urlProblem, type AllowedHosts } from './destination.js';
import type { DeliveryRecord, EventRecord, Level, WebhookRecord } from './records.js';
import type { OutboundRequest, Subscriber, SubscriberSource } from './sources.js';
import { appWebhooks, deliveries, deliveriesByGroup, events, eventsByApp } from './keyspaces.js';
import { readWindow, type LogWindow, type WindowRead } from './log-window.js';
import { deliveriesOf, eventsOf, getDelivery, getEvent } from './deliveries.js';

/** Entities an app webhook may include: the platform's that Slipway emits, and its registry extension. */
export const APP_WEBHOOK_ENTITIES = ['api:app', 'api:collaborator', 'api:formation', 'api:release', 'registry:image'] as const;
/** Webhooks one app may have (ours; the platform does not document its limit). */
export const MAX_WEBHOOKS_PER_APP = 10;
/** Longest `secret` and `authorization` accepted (characters). */
export const MAX_SECRET_LENGTH = 1024;
/** Kind of this subscriber source. */
export const APP_WEBHOOK_SOURCE = 'app-webhook';

/** Fields of a create or update request, as the API received them (unchecked). */
export interface WebhookInput {
  include?: unknown;
  level?: unknown;
  url?: unknown;
  secret?: unknown;
  authorization?: unknown;
}

/**
 * The payload of an event without `webhook_metadata` (the platform's envelope: action, actor,
 * created_at, data, id, previous_data, published_at, resource, sequence, updated_at, version),
 * built by the API layer, which knows the resources' representations.
 */
export type PayloadRenderer = (event: EventRecord) => Promise<Record<string, unknown>>;

function bad(message: string): never {
  throw fail('INVALID_PARAMS', message);
}

function checkInclude(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.some((e) => typeof e !== 'string')) bad('include must be a non-empty array of entity names');
  const unknown = (v as string[]).filter((e) => !(APP_WEBHOOK_ENTITIES as readonly string[]).includes(e));
  if (unknown.length > 0) bad(`include: unknown entit${unknown.length > 1 ? 'ies' : 'y'} ${unknown.slice(0, 5).map((e) => JSON.stringify(e.slice(0, 40))).join(', ')}; supported: ${APP_WEBHOOK_ENTITIES.join(', ')}`);
  return [...new Set(v as string[])].sort();
}

function checkLevel(v: unknown): Level {
  if (v !== 'notify' && v !== 'sync') bad('level must be "notify" or "sync"');
  return v;
}

function checkSecretText(name: string, v: unknown): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_SECRET_LENGTH || /[\r\n\0]/.test(v)) bad(`${name} must be a string of 1 to ${MAX_SECRET_LENGTH} characters without line breaks`);
  return v;
}

export class AppWebhooks implements SubscriberSource {
  readonly kind = APP_WEBHOOK_SOURCE;

  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly keys: ServerKeys, readonly render: PayloadRenderer, readonly allowed: AllowedHosts = NOTHING_ALLOWED) {}

  #url(v: unknown): string {
    if (typeof v !== 'string') bad('url must be an https URL');
    const problem = urlProblem(v, this.allowed);
    if (problem !== null) bad(problem);
    return v;
  }

  /**
   * Creates a webhook of `appId`.
   * @returns the webhook and its signing secret in clear (given, or 32 random bytes as hex): shown once.
   * @throws INVALID_PARAMS (422) for a bad include, level, url, secret or authorization, or past MAX_WEBHOOKS_PER_APP.
   */
  async create(appId: string, input: WebhookInput): Promise<{ webhook: WebhookRecord; secret: string }> {
    const include = checkInclude(input.include);
    const level = checkLevel(input.level);
    const url = this.#url(input.url);
    const secret = input.secret === undefined || input.secret === null ? randomBytes(32).toString('hex') : checkSecretText('secret', input.secret);
    const authorization = input.authorization === undefined || input.authorization === null ? null : checkSecretText('authorization', input.authorization);
    const now = this.clock.now();
    const webhook: WebhookRecord = {
      id: newId(), appId, include, level, url, secretSealed: this.keys.seal(secret),
      authorizationSealed: authorization === null ? null : this.keys.seal(authorization), createdAt: now, updatedAt: now,
    };
    await this.metadata.transact(async (tx) => {
      const existing = (await tx.range(appWebhooks, { prefix: appId })).filter((e) => e.value.removedAt === undefined);
      if (existing.length >= MAX_WEBHOOKS_PER_APP) bad(`an app may have at most ${MAX_WEBHOOKS_PER_APP} webhooks; remove one first`);
      tx.put(appWebhooks, key(appId, webhook.id), webhook);
    });
    return { webhook, secret };
  }

  /** The app's webhooks, oldest first. */
  async list(appId: string): Promise<WebhookRecord[]> {
    return (await this.metadata.range(appWebhooks, { prefix: appId })).map((e) => e.value).filter((w) => w.removedAt === undefined).sort((a, b) => a.createdAt - b.createdAt);
  }

  /** One webhook of the app. @throws NOT_FOUND (resource `webhook`). */
  async get(appId: string, id: string): Promise<WebhookRecord> {
    const w = /^[0-9a-f-]{36}$/.test(id) ? await this.metadata.get(appWebhooks, key(appId, id)) : undefined;
    if (!w || w.removedAt !== undefined) throw fail('NOT_FOUND', `Couldn't find that webhook.`, { resource: 'webhook' });
    return w;
  }

  /**
   * Changes the fields given (include, level, url, secret, authorization; null authorization removes it).
   * @throws NOT_FOUND; INVALID_PARAMS as `create`.
   */
  async update(appId: string, id: string, input: WebhookInput): Promise<WebhookRecord> {
    await this.get(appId, id);
    const patch: Partial<WebhookRecord> = {};
    if (input.include !== undefined) patch.include = checkInclude(input.include);
    if (input.level !== undefined) patch.level = checkLevel(input.level);
    if (input.url !== undefined) patch.url = this.#url(input.url);
    if (input.secret !== undefined && input.secret !== null) patch.secretSealed = this.keys.seal(checkSecretText('secret', input.secret));
    if (input.authorization !== undefined) patch.authorizationSealed = input.authorization === null ? null : this.keys.seal(checkSecretText('authorization', input.authorization));
    const now = this.clock.now();
    return this.metadata.transact(async (tx) => {
      const current = await tx.get(appWebhooks, key(appId, id));
      if (!current || current.removedAt !== undefined) throw fail('NOT_FOUND', `Couldn't find that webhook.`, { resource: 'webhook' });
      const next = { ...current, ...patch, updatedAt: now };
      tx.put(appWebhooks, key(appId, id), next);
      return next;
    });
  }

  /** Removes a webhook; its pending deliveries are skipped. @returns the removed webhook. @throws NOT_FOUND. */
  async remove(appId: string, id: string): Promise<WebhookRecord> {
    const w = await this.get(appId, id);
    await this.metadata.transact((tx) => tx.remove(appWebhooks, key(appId, id)));
    return w;
  }

  /** The app's deliveries, oldest first (at most 1000), with their events. */
  async deliveries(appId: string): Promise<Array<{ delivery: DeliveryRecord; event: EventRecord | undefined }>> {
    return this.#withEvents(await deliveriesOf(this.metadata, appId));
  }

  async #withEvents(list: DeliveryRecord[]): Promise<Array<{ delivery: DeliveryRecord; event: EventRecord | undefined }>> {
    const evs = await this.metadata.getMany(list.map((d) => [events, d.eventId] as const));
    return list.map((delivery, i) => ({ delivery, event: evs[i] }));
  }

  /**
   * The latest deliveries of one webhook, newest first: at most `limit` among the app's newest
   * 1000 deliveries (the dashboard's view of a webhook).
   */
  async recentDeliveries(appId: string, webhookId: string, limit: number): Promise<Array<{ delivery: DeliveryRecord; event: EventRecord | undefined }>> {
    const list = await deliveriesOf(this.metadata, appId, 1000, true);
    return this.#withEvents(list.filter((d) => d.source === this.kind && d.subscriberId === webhookId).slice(0, limit));
  }

  /** One delivery of the app with its event. @throws NOT_FOUND (resource `webhook-delivery`). */
  async delivery(appId: string, id: string): Promise<{ delivery: DeliveryRecord; event: EventRecord | undefined }> {
    const d = /^[0-9a-f-]{36}$/.test(id) ? await getDelivery(this.metadata, id) : undefined;
    if (!d || d.group !== appId || d.source !== this.kind) throw fail('NOT_FOUND', `Couldn't find that webhook delivery.`, { resource: 'webhook-delivery' });
    return { delivery: d, event: await getEvent(this.metadata, d.eventId) };
  }

  /** The app's events, oldest first (at most 1000). */
  events(appId: string): Promise<EventRecord[]> {
    return eventsOf(this.metadata, appId);
  }

  /**
   * A window of the app's deliveries in creation order (log-window.ts), whatever the log's
   * length, with their events; `status`: only deliveries in that status.
   */
  async deliveryWindow(appId: string, w: LogWindow, status: string | null): Promise<{ items: Array<{ seq: string; delivery: DeliveryRecord; event: EventRecord | undefined }>; resumeAfter: string | null }> {
    const read = await readWindow(this.metadata, deliveriesByGroup, deliveries, appId, w, (d) => status === null || d.status === status);
    const withEvents = await this.#withEvents(read.items.map((i) => i.value));
    return { items: withEvents.map((d, i) => ({ seq: read.items[i]!.seq, ...d })), resumeAfter: read.resumeAfter };
  }

  /** A window of the app's events in creation order (log-window.ts), whatever the log's length. */
  eventWindow(appId: string, w: LogWindow): Promise<WindowRead<EventRecord>> {
    return readWindow(this.metadata, eventsByApp, events, appId, w);
  }

  /** One event of the app. @throws NOT_FOUND (resource `webhook-event`). */
  async event(appId: string, id: string): Promise<EventRecord> {
    const e = /^[0-9a-f-]{36}$/.test(id) ? await getEvent(this.metadata, id) : undefined;
    if (!e || e.appId !== appId) throw fail('NOT_FOUND', `Couldn't find that webhook event.`, { resource: 'webhook-event' });
    return e;
  }

  /** Subscribers of `event`: the app's webhooks that include its entity and existed when it was recorded. */
  async subscribers(reader: MetadataReader, event: EventRecord): Promise<Subscriber[]> {
    if (event.appId === null) return [];
    const all = await reader.range(appWebhooks, { prefix: event.appId });
    return all.map((e) => e.value)
      .filter((w) => (w.removedAt === undefined || w.removedAt >= event.createdAt) && w.createdAt <= event.createdAt && w.include.includes(event.entity))
      .map((w) => ({ id: w.id, level: w.level, group: event.appId! }));
  }

  /** The signed request of the current attempt of `delivery`; null when the webhook was removed. */
  async request(event: EventRecord, delivery: DeliveryRecord): Promise<OutboundRequest | null> {
    const w = await this.metadata.get(appWebhooks, key(delivery.group, delivery.subscriberId));
    if (!w) return null;
    const attempt = delivery.attempts[delivery.attempts.length - 1];
    const payload = {
      ...await this.render(event),
      webhook_metadata: {
        attempt: { id: attempt?.id ?? null }, delivery: { id: delivery.id }, event: { id: event.id, include: event.entity }, webhook: { id: w.id },
      },
    };
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = {
      'Content-Type': 'application/json', 'User-Agent': 'Slipway-Webhooks',
      'Heroku-Webhook-Hmac-SHA256': signature(this.keys.unseal(w.secretSealed), body),
      'Slipway-Webhook-Event-Id': event.id, 'Slipway-Webhook-Delivery-Id': delivery.id, 'Slipway-Webhook-Attempt': String(delivery.numAttempts),
    };
    if (w.authorizationSealed !== null) headers.Authorization = this.keys.unseal(w.authorizationSealed);
    return { url: w.url, headers, body };
  }
}

/**
 * Marks every webhook of `appId` removed, inside the transaction that destroys the app: they
 * still receive the events recorded up to then (the `api:app` destroy included), then are pruned.
 */
export async function removeAppWebhooksInTransaction(tx: MetadataTransaction, appId: string, now: number): Promise<void> {
  for (const e of await tx.range(appWebhooks, { prefix: appId })) {
    if (e.value.removedAt === undefined) tx.put(appWebhooks, e.key, { ...e.value, removedAt: now });
  }
}

/** The platform's signature of a body: base64 HMAC-SHA256 under the webhook's secret. */
export function signature(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('base64');
}
