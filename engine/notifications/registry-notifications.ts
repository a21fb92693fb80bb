/**
 * Registry notifications for operators (docs/notifications.md):
 * turns the registry's changes into distribution's events (envelope.ts) and records them, as one
 * envelope per webhook event, in the delivery engine's outbox (engine/webhooks/outbox.ts), whose
 * worker delivers them to every endpoint that wants them (source.ts).
 *
 * - Manifest push, manifest or tag delete and blob mount are recorded by `recordInTransaction`
 *   inside the transaction of the change itself (a transactional outbox): the event exists if
 *   and only if the change committed, and reaches the endpoint at least once after that, across
 *   restarts, with the same event id on every attempt.
 * - Manifest pulls go through a bounded buffer flushed in the background (pull-buffer.ts), so a
 *   pull does no metadata write of its own.
 *
 * Each push, delete or mount is one envelope of one event (as distribution sends them); pulls are
 * grouped, up to `PullBufferOptions.batch` events per envelope.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { MetadataStore, MetadataTransaction } from '../storage/metadata.js';
import { recordEvent } from '../webhooks/outbox.js';
import { eventOf, type DistributionEvent, type EventAction, type EventOrigin, type EventSubject, type SourceRecord } from './envelope.js';
import { wantsAction, type NotificationEndpoint } from './endpoints.js';
import { PullBuffer, PULL_BUFFER_DEFAULTS, type PullBufferOptions, type PullRecord } from './pull-buffer.js';
import { NOTIFICATION_ENTITY, NotificationSource } from './source.js';

/** What the registry engine asks of notifications (engine/registry/registry.ts). */
export interface ChangeRecorder {
  /** True when some endpoint wants events of `action` (callers skip building anything otherwise). */
  wants(action: EventAction): boolean;
  /** Records events for `subjects` as part of `tx` (see the module header). */
  recordInTransaction(tx: MetadataTransaction, subjects: readonly EventSubject[], origin: EventOrigin): Promise<void>;
}

/** Options of RegistryNotifications. */
export interface RegistryNotificationsOptions {
  endpoints: readonly NotificationEndpoint[];
  store: MetadataStore;
  clock: Clock;
  /** This node, as events name it (read per event: the port is known once the listener is bound). */
  source: () => SourceRecord;
  /** The registry's public base URL (known once the listener is bound), for target URLs. */
  registryUrl: () => string;
  /** The e-mail of an account id, for pull events' actor (undefined: not known). */
  actorName: (accountId: string) => Promise<string | undefined>;
  pullBuffer?: PullBufferOptions;
  /** Told about a pull batch that could not be written (it is kept for the next flush while there is room). */
  onError?: (e: unknown) => void;
}

/** Registry notifications of one node. */
export class RegistryNotifications implements ChangeRecorder {
  readonly #actions: ReadonlySet<EventAction>;
  readonly pulls: PullBuffer;
  /** The delivery worker's subscriber source of these notifications (register it on every node). */
  readonly source: NotificationSource;

  constructor(readonly options: RegistryNotificationsOptions) {
    this.#actions = new Set((['push', 'pull', 'delete', 'mount'] as const).filter((a) => options.endpoints.some((e) => wantsAction(e, a))));
    this.pulls = new PullBuffer((batch) => this.#writePulls(batch), options.pullBuffer ?? PULL_BUFFER_DEFAULTS, options.onError);
    this.source = new NotificationSource(options.endpoints);
  }

  wants(action: EventAction): boolean {
    return this.#actions.has(action);
  }

  /**
   * Event ids are drawn inside the transaction body: a body run again draws new ones, and only
   * the committed run's events exist, so each event keeps one id in every delivery and attempt.
   */
  async recordInTransaction(tx: MetadataTransaction, subjects: readonly EventSubject[], origin: EventOrigin): Promise<void> {
    const at = this.options.clock.now();
    for (const subject of subjects) {
      if (this.wants(subject.action)) this.#record(tx, [this.#event(subject, origin, at)], origin.accountId ?? null, at);
    }
  }

  /** Records a manifest pull (buffered: pull-buffer.ts). No I/O, no promise. */
  pulled(pull: PullRecord): void {
    this.pulls.add(pull);
  }

  /**
   * One webhook event holding the envelope of `events` (the delivery engine fans it out to the
   * endpoints: source.ts). A single event's id is the envelope's; a batch of pulls gets its own.
   */
  #record(tx: MetadataTransaction, events: DistributionEvent[], actorId: string | null, at: number): void {
    recordEvent(tx, {
      id: events.length === 1 ? events[0]!.id : randomUUID(), entity: NOTIFICATION_ENTITY, action: events[0]!.action,
      appId: null, appName: null, actorId, data: { events }, previousData: null, createdAt: at,
    });
  }

  #event(subject: EventSubject, origin: EventOrigin, at: number): DistributionEvent {
    return eventOf(subject, origin, this.options.source(), this.options.registryUrl(), randomUUID(), at);
  }

  async #writePulls(batch: PullRecord[]): Promise<void> {
    const names = new Map<string, string | undefined>();
    for (const p of batch) if (p.accountId !== '' && !names.has(p.accountId)) names.set(p.accountId, await this.options.actorName(p.accountId));
    const events = batch.map((p) => {
      const name = names.get(p.accountId);
      const origin: EventOrigin = {
        request: { id: p.requestId, addr: p.addr, host: p.host, method: p.method, useragent: p.useragent },
        actor: name === undefined ? {} : { name },
      };
      return this.#event({ action: 'pull', kind: 'manifest', repository: p.repository, digest: p.digest, mediaType: p.mediaType, size: p.size, ...(p.tag ? { tag: p.tag } : {}) }, origin, p.at);
    });
    await this.options.store.transact((tx) => this.#record(tx, events, null, this.options.clock.now()));
  }

  /** Flushes the pulls waiting and takes no more (drain, close). */
  stop(): Promise<void> {
    return this.pulls.stop();
  }
}
