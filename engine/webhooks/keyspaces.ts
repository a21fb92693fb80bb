/**
 * The webhooks domain's keyspaces (docs/webhooks.md "Engine"). Only modules of engine/webhooks/
 * import this file (test/engine/import-rules.test.ts). Times in keys are ms since the epoch,
 * zero-padded to 15 digits so keys sort by time.
 */
import { keyspace } from '../storage/metadata.js';
import type { DeliveryRecord, EventRecord, WebhookRecord } from './records.js';

/** event id → event. */
export const events = keyspace<EventRecord>('webhooks', 'webhook-events');
/** `createdAt␟event id` → event id: events not yet fanned out to their subscribers (the outbox). */
export const outbox = keyspace<string>('webhooks', 'webhook-outbox');
/** `app id␟createdAt␟event id` → event id: an app's events, oldest first. */
export const eventsByApp = keyspace<string>('webhooks', 'webhook-events-by-app');
/** `createdAt␟event id` → event id: every event, oldest first (retention.ts prunes from the front). */
export const eventsByTime = keyspace<string>('webhooks', 'webhook-events-by-time');
/** `event id␟delivery id` → delivery id: an event's deliveries (retention.ts removes them with it). */
export const deliveriesByEvent = keyspace<string>('webhooks', 'webhook-deliveries-by-event');
/** delivery id → delivery. */
export const deliveries = keyspace<DeliveryRecord>('webhooks', 'webhook-deliveries');
/** `dueAt␟delivery id` → the delivery's group: when a delivery must next be looked at (next attempt, or its lease's end). */
export const due = keyspace<string>('webhooks', 'webhook-due');
/** `group␟createdAt␟delivery id` → delivery id: a group's (an app's) deliveries, oldest first. */
export const deliveriesByGroup = keyspace<string>('webhooks', 'webhook-deliveries-by-group');
/** `app id␟webhook id` → app webhook. */
export const appWebhooks = keyspace<WebhookRecord>('webhooks', 'app-webhooks');
