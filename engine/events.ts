/**
 * Domain events on named `node:diagnostics_channel` channels (docs/rules.md Events 1; docs/architecture.md (Engine domains):
 * "domain events go on diagnostics_channel channels", as undici and oidc-provider do).
 *
 * The engine publishes; the server (server/main.ts) subscribes and writes each event as one JSON
 * log line; anything else in the process (metrics, webhooks later, tests) may subscribe too.
 * Publishing is free when nobody listens: `publish` checks `hasSubscribers` before it builds the
 * message when it is given as a function, and diagnostics_channel itself does no work then.
 *
 * Channels and their messages:
 * - `slipway:release`        (kind `release`) a release was created (formation update or rollback)
 * - `slipway:authorization`  (kind `authorization`) an authorization was created, regenerated or revoked
 * - `slipway:gc`             (kind `gc`) a garbage-collection run finished (dry runs too)
 *
 * Messages are plain objects (times in ms since the epoch); they never carry secrets (no token
 * values, no hashes of them). Usage: `publishEvent('release', () => ({ app, version, types, userId }))`.
 * The kind is the channel; messages carry no `type` field.
 */
import diagnostics_channel from 'node:diagnostics_channel';

/** `slipway:release`: one per release created (formation update or rollback). */
export interface ReleaseEvent {
  /** App name. */
  app: string;
  /** Release number (1, 2, …). */
  version: number;
  /** Process types the release runs (every type, not only the updated ones). */
  types: string[];
  /** Account that created it. */
  userId: string;
  /** Release this one rolled back to, when a rollback. */
  rollbackOf?: number | null;
}

/** `slipway:authorization`: an OAuth, direct or team authorization changed. */
export interface AuthorizationEvent {
  action: 'created' | 'regenerated' | 'revoked';
  authorizationId: string;
  /** Account that owns (or, for team tokens, acted on) the authorization. */
  accountId: string;
  /** Owning team for team authorizations. */
  teamId?: string | null;
  /** OAuth client for web-flow authorizations; absent/null for direct ones. */
  clientId?: string | null;
  scopes?: string[];
}

/** `slipway:gc`: summary of one garbage-collection run (engine/registry/gc.ts). */
export interface GcEvent {
  /** True when nothing was changed (the CLI's `--dry-run`). */
  dryRun: boolean;
  /** ms since epoch (engine clock) when the run started. */
  startedAt: number;
  /** Wall-clock duration of the run, ms. */
  durationMs: number;
  /** Images ((repository, manifest) pairs) deleted by rule, and images kept. */
  images: { unreleased: number; expired: number; kept: number };
  /** Blob records and files deleted, the bytes their files held, unreferenced blobs kept (grace). */
  blobs: { deleted: number; bytes: number; kept: number };
  /** Blob files without a record (crash leftovers) deleted, and their bytes. */
  orphans: { deleted: number; bytes: number };
}

/** Every event kind and its message; the channel of kind `k` is named `slipway:<k>`. */
export interface EventMap {
  release: ReleaseEvent;
  authorization: AuthorizationEvent;
  gc: GcEvent;
}
export type EventKind = keyof EventMap;

/** Event kinds, for subscribers that log everything. */
export const EVENT_KINDS: readonly EventKind[] = ['release', 'authorization', 'gc'];

/** The diagnostics_channel name of an event kind (`slipway:release`, …). */
export function channelName(kind: EventKind): string {
  return `slipway:${kind}`;
}

const channels = new Map<EventKind, diagnostics_channel.Channel>(EVENT_KINDS.map((k) => [k, diagnostics_channel.channel(channelName(k))]));

/** True when at least one subscriber listens to `kind` (only then does publishing cost anything). */
export function hasSubscribers(kind: EventKind): boolean {
  return channels.get(kind)!.hasSubscribers;
}

/**
 * Publishes an event of `kind`. Pass a function to build the message only when someone listens.
 * Subscribers run synchronously; one that throws does not affect the publisher
 * (diagnostics_channel rethrows it on the next tick as an uncaught exception).
 */
export function publishEvent<K extends EventKind>(kind: K, message: EventMap[K] | (() => EventMap[K])): void {
  const ch = channels.get(kind)!;
  if (!ch.hasSubscribers) return;
  ch.publish(typeof message === 'function' ? message() : message);
}

/**
 * Subscribes `listener` to events of `kind`.
 * @returns a function that unsubscribes it.
 */
export function subscribeEvent<K extends EventKind>(kind: K, listener: (message: EventMap[K]) => void): () => void {
  const fn = (m: unknown) => listener(m as EventMap[K]);
  diagnostics_channel.subscribe(channelName(kind), fn);
  return () => {
    diagnostics_channel.unsubscribe(channelName(kind), fn);
  };
}

