/**
 * Domain events on named `node:diagnostics_channel` channels (issue 4 item 7; DESIGN.md habits:
 * "domain events go on diagnostics_channel channels", as undici and oidc-provider do).
 *
 * The engine publishes; the server (server/main.ts) subscribes and writes each event as one JSON
 * log line; anything else in the process (metrics, webhooks later, tests) may subscribe too.
 * Publishing is free when nobody listens: `publish` checks `hasSubscribers` before it builds the
 * message when it is given as a function, and diagnostics_channel itself does no work then.
 *
 * Channels and their messages:
 * - `slipway:release`        a release was created (formation update or rollback)
 * - `slipway:authorization`  an authorization was created, regenerated or revoked
 * - `slipway:gc`             a garbage-collection run finished (also dry runs)
 *
 * Messages are plain, structured-clone-safe objects with times in ms since the epoch; they never
 * carry secrets (no token values, no hashes of them).
 */
import diagnostics_channel from 'node:diagnostics_channel';

/** `slipway:release`: one per release created. */
export interface ReleaseEvent {
  type: 'release.created';
  appId: string;
  appName: string;
  /** Release number (1, 2, …). */
  version: number;
  /** Account that created it. */
  userId: string;
  /** Process types the release runs (every type, not only the updated ones). */
  processTypes: string[];
  /** Release this one rolled back to, or null. */
  rollbackOf: number | null;
  /** ms since epoch (the engine clock). */
  at: number;
}

/** `slipway:authorization`: an OAuth/direct/team authorization changed. */
export interface AuthorizationEvent {
  type: 'authorization.created' | 'authorization.regenerated' | 'authorization.revoked';
  authorizationId: string;
  /** Account that owns (or, for team tokens, created) the authorization. */
  accountId: string;
  /** Owning team for team authorizations, else null. */
  teamId: string | null;
  /** OAuth client for web-flow authorizations, null for direct ones. */
  clientId: string | null;
  scopes: string[];
  /** ms since epoch (the engine clock). */
  at: number;
}

/** `slipway:gc`: summary of one garbage-collection run (engine/registry/gc.ts). */
export interface GcEvent {
  type: 'gc.run';
  /** True when nothing was changed (the CLI's `--dry-run`). */
  dryRun: boolean;
  /** ms since epoch (engine clock) when the run started. */
  startedAt: number;
  /** Wall-clock duration of the run, ms. */
  durationMs: number;
  /** Images ((repository, manifest) pairs) deleted, by rule. */
  images: { unreleased: number; expired: number; kept: number };
  /** Blob records and files deleted, and the bytes their files held. */
  blobs: { deleted: number; bytes: number; kept: number };
  /** Blob files without a record (crash leftovers) deleted, and their bytes. */
  orphans: { deleted: number; bytes: number };
}

/** Every channel name and the message it carries. */
export interface EventMap {
  'slipway:release': ReleaseEvent;
  'slipway:authorization': AuthorizationEvent;
  'slipway:gc': GcEvent;
}
export type EventName = keyof EventMap;

/** The channel names, for subscribers outside the engine. */
export const EVENT_CHANNELS: readonly EventName[] = ['slipway:release', 'slipway:authorization', 'slipway:gc'];

const channels = new Map<EventName, diagnostics_channel.Channel>(EVENT_CHANNELS.map((n) => [n, diagnostics_channel.channel(n)]));

function channelOf(name: EventName): diagnostics_channel.Channel {
  return channels.get(name)!;
}

/** True when at least one subscriber listens on `name` (then publishing costs something). */
export function hasSubscribers(name: EventName): boolean {
  return channelOf(name).hasSubscribers;
}

/**
 * Publishes `message` on channel `name`. Pass a function to build the message only when someone
 * listens. Subscribers run synchronously; one that throws does not affect the publisher
 * (diagnostics_channel reports it as an uncaught exception on the next tick).
 */
export function publish<K extends EventName>(name: K, message: EventMap[K] | (() => EventMap[K])): void {
  const ch = channelOf(name);
  if (!ch.hasSubscribers) return;
  ch.publish(typeof message === 'function' ? message() : message);
}

/**
 * Subscribes `listener` to channel `name`.
 * @returns a function that unsubscribes it.
 */
export function subscribe<K extends EventName>(name: K, listener: (message: EventMap[K]) => void): () => void {
  const fn = (m: unknown) => listener(m as EventMap[K]);
  diagnostics_channel.subscribe(name, fn);
  return () => {
    diagnostics_channel.unsubscribe(name, fn);
  };
}
