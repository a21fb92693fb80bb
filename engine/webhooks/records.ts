/**
 * Records of the webhooks domain (docs/webhooks.md "Engine"): events written by the transactional
 * outbox, deliveries (one per event and subscriber) with their attempts, and app webhook
 * subscriptions. Times are ms since the epoch (engine clock).
 */

/** Delivery levels (the platform's app-webhook `level`): `notify` = one attempt, `sync` = retried until success or the horizon. */
export type Level = 'notify' | 'sync';

/**
 * One event, written in the same metadata transaction as the change it describes
 * (`recordEvent`, outbox.ts). Immutable once written.
 */
export interface EventRecord {
  /** Stable event id (UUID): the same in every delivery and attempt of this event. */
  id: string;
  /** What changed, as the subscribers name it: `api:release`, `api:formation`, `api:app`, `registry:image`, … */
  entity: string;
  /** `create` | `update` | `destroy` for platform entities; sources may define others (`push`, `pull`, `delete`, `mount`). */
  action: string;
  /** The app the event concerns (app webhooks subscribe per app), or null (registry-wide events). */
  appId: string | null;
  /** The app's name when the event was recorded (for payloads; an app may later be renamed or destroyed). */
  appName: string | null;
  /** Account that caused the change, or null (the system: GC, retention). */
  actorId: string | null;
  /** The resource after the change (destroy: before it): plain data, shaped by the recording domain. */
  data: unknown;
  /** The changed fields' values before the change (update), else null. */
  previousData: unknown;
  createdAt: number;
}

/** Why an attempt did not succeed (recorded per attempt; see docs/webhooks.md). */
export type AttemptCause =
  | 'http-status' // the receiver answered outside 2xx (3xx included: redirects are not followed)
  | 'timeout' // no complete answer within the timeout (connect, headers and body together)
  | 'refused' // connection refused or reset
  | 'ssrf-refused' // the destination resolved to a forbidden address, or the URL is not allowed
  | 'dns' // the host name did not resolve
  | 'tls' // TLS handshake or certificate failure
  | 'interrupted' // the node making the attempt stopped (its lease expired without an outcome)
  | 'error'; // anything else (detail says what)

/** One attempt of a delivery. */
export interface AttemptRecord {
  /** Attempt id (UUID). */
  id: string;
  /** 1 for the first attempt. */
  number: number;
  /** Node that made it (SLIPWAY_NODE_NAME). */
  node: string;
  startedAt: number;
  /** When its outcome was recorded; null while in flight. */
  finishedAt: number | null;
  /** The receiver's HTTP status, or null when none came. */
  code: number | null;
  /** True for a 2xx answer. */
  ok: boolean;
  /** Why it failed (null on success or while in flight). */
  cause: AttemptCause | null;
  /** A short, secret-free description of the failure (error code, `HTTP 503`), or null. */
  detail: string | null;
  /** How long the attempt took, ms (monotonic clock); absent while in flight or when interrupted. */
  durationMs?: number;
}

/**
 * The platform's delivery statuses: `pending` (not attempted yet), `scheduled` (a retry is
 * waiting), `retrying` (a retry is in flight), `succeeded`, `failed` (notify's one attempt
 * failed, or sync reached its horizon), `skipped` (the subscriber was removed before delivery).
 */
export type DeliveryStatus = 'pending' | 'scheduled' | 'retrying' | 'succeeded' | 'failed' | 'skipped';

/** One (event, subscriber) pair: its state, lease and attempts. */
export interface DeliveryRecord {
  /** Stable delivery id (UUID derived from event id and subscriber: deliveryIdOf). */
  id: string;
  eventId: string;
  /** The subscriber source (`app-webhook`, or another source's kind). */
  source: string;
  /** The subscriber within its source (app webhook id, endpoint name). */
  subscriberId: string;
  /** Concurrency and listing group: the app id for app webhooks, the source's own group otherwise. */
  group: string;
  level: Level;
  status: DeliveryStatus;
  /** Attempts started (counted when claimed, so a crash mid-attempt still counts it). */
  numAttempts: number;
  /** When the next attempt is due (pending and scheduled deliveries), else null. */
  nextAttemptAt: number | null;
  /** The node holding the delivery while it makes an attempt, or null. */
  lease: { node: string; token: string; until: number } | null;
  /** The latest attempts, oldest first (at most MAX_ATTEMPTS_KEPT). */
  attempts: AttemptRecord[];
  /**
   * Its event's time (ms), whenever it was fanned out: deliveries are listed in their events'
   * order, and the retry horizon counts from the event.
   */
  createdAt: number;
  updatedAt: number;
}

/** Attempts kept in a delivery record (older ones are dropped; numAttempts still counts them). */
export const MAX_ATTEMPTS_KEPT = 20;

/** An app webhook subscription (the platform's app-webhook). */
export interface WebhookRecord {
  id: string;
  appId: string;
  /** Entities subscribed to (`api:release`, …). */
  include: string[];
  level: Level;
  url: string;
  /** The signing secret, sealed (ServerKeys.seal): HMAC needs it in clear at delivery time. */
  secretSealed: string;
  /** The `Authorization` header value sent with every delivery, sealed; null when none. */
  authorizationSealed: string | null;
  createdAt: number;
  updatedAt: number;
  /** Set when the app was destroyed: the webhook only serves deliveries already made; pruned later. */
  removedAt?: number;
}
