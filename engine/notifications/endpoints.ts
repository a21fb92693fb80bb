/**
 * An operator's notification endpoint: where registry events go and which of them it wants, as in
 * distribution's `notifications.endpoints` configuration (distribution docs "Configuration",
 * `notifications`: name, url, headers, timeout, threshold, backoff, ignoredmediatypes,
 * ignore.mediatypes/actions, disabled). Parsed from the settings by
 * server/notifications/endpoint-settings.ts.
 */
import type { DistributionEvent, EventAction } from './envelope.js';

/** One endpoint. Header values are secrets: never logged, shown or stored in the outbox. */
export interface NotificationEndpoint {
  /** Unique among the endpoints: `[A-Za-z0-9._-]{1,63}`; names the endpoint in logs, metrics and the outbox. */
  name: string;
  /** http or https URL events are POSTed to. */
  url: string;
  /** Extra request headers (name → values, each value sent as its own header line). */
  headers: Record<string, string[]>;
  /** Longest one delivery attempt may take (ms; distribution default 1 s). */
  timeoutMs: number;
  /** Consecutive failed attempts after which the endpoint is backed off (distribution default 10). */
  threshold: number;
  /** How long a backed-off endpoint waits before the next attempt (ms; distribution default 1 s). */
  backoffMs: number;
  /** Target media types this endpoint does not get (`ignoredmediatypes` and `ignore.mediatypes`). */
  ignoredMediaTypes: string[];
  /** Actions this endpoint does not get (`ignore.actions`). */
  ignoredActions: EventAction[];
}

/** Defaults of distribution's `EndpointConfig.defaults()`. */
export const ENDPOINT_DEFAULTS = { timeoutMs: 1000, threshold: 10, backoffMs: 1000 } as const;

/** True when `endpoint` wants events of `action` at all (no event is built for nobody). */
export function wantsAction(endpoint: NotificationEndpoint, action: EventAction): boolean {
  return !endpoint.ignoredActions.includes(action);
}

/** True when `endpoint` wants `event` (its action and its target's media type are not ignored). */
export function wantsEvent(endpoint: NotificationEndpoint, event: DistributionEvent): boolean {
  const mt = event.target.mediaType;
  return wantsAction(endpoint, event.action) && (mt === undefined || !endpoint.ignoredMediaTypes.includes(mt));
}
