/**
 * Subscriber sources: what the delivery engine (worker.ts) asks to learn who receives an event
 * and what to send. App webhooks (app-webhooks.ts) are one source; operator endpoints from the
 * config are another (docs/webhooks.md "Engine"). A source is registered with the worker under
 * its `kind`, which deliveries record, so every node must register the same sources.
 */
import type { MetadataReader } from '../storage/metadata.js';
import type { DeliveryRecord, EventRecord, Level } from './records.js';
import type { RetryPolicy } from './deliveries.js';
import type { AllowedHosts } from './destination.js';

/** One subscriber of an event, as its source names it. */
export interface Subscriber {
  /** Unique within the source (`[A-Za-z0-9._:-]{1,200}`): the app webhook id, the endpoint name. */
  id: string;
  level: Level;
  /**
   * Concurrency and listing group: attempts of one group run at most `perGroupConcurrency` at a
   * time on a node, so one slow receiver holds back only its own group. App webhooks use the
   * app id; a source with one group per endpoint uses the endpoint.
   */
  group: string;
}

/** The HTTP request of one attempt. The engine adds nothing but `Content-Length`. */
export interface OutboundRequest {
  url: string;
  /** Header name → value (`Content-Type`, signature headers, `Authorization`, …). */
  headers: Record<string, string>;
  /** The request body (bytes sent as given). */
  body: string | Uint8Array;
  /** Longest this attempt may take (ms); at most the worker's timeout, which is the default. */
  timeoutMs?: number;
  /**
   * The destination policy of this request instead of the operator's allowance: only for a URL
   * the operator wrote in the configuration (registry notification endpoints), never a tenant's.
   */
  allowed?: AllowedHosts;
}

/** A kind of subscriber (see the top of this file). */
export interface SubscriberSource {
  /** `[a-z0-9-]{1,40}`, recorded in each delivery (`app-webhook`, `registry-notification`). */
  readonly kind: string;
  /**
   * The subscribers of `event`, read inside the fan-out transaction through `reader` (reads of
   * the source's own records count for the transaction's serializability). Must be a pure
   * function of what it reads and of `event` (the transaction may run it again).
   */
  subscribers(reader: MetadataReader, event: EventRecord): Promise<Subscriber[]> | Subscriber[];
  /**
   * The request of one attempt of `delivery` of `event`, built outside any transaction; null
   * when the subscriber no longer exists (the delivery is then `skipped`, not attempted). The
   * same event and delivery ids must appear in every attempt (receivers de-duplicate on them).
   * @throws anything: the attempt is recorded as failed with cause `error`.
   */
  request(event: EventRecord, delivery: DeliveryRecord): Promise<OutboundRequest | null>;
  /** The retry policy of `delivery` (a `sync` one) given the worker's `policy`; default: the worker's. */
  retryPolicy?(delivery: DeliveryRecord, policy: RetryPolicy): RetryPolicy;
}
