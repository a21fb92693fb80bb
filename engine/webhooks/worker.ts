/**
 * The delivery worker (docs/webhooks.md "Engine"): one per node, in the background, never on a
 * request path. Each pass fans the outbox out (outbox.ts), prunes events past their retention
 * (retention.ts, a bounded batch at most once a minute), then claims due deliveries
 * (deliveries.ts) and makes their attempts concurrently, at most `perGroup` at a time per group
 * (app) and `maxInFlight` in all on this node, so a slow receiver holds back only its own app.
 * Passes run every `pollMs`, sooner after a local `recordEvent` or a finished attempt.
 *
 * Bounds: an attempt ends within `timeoutMs`; its lease lasts `timeoutMs + LEASE_MARGIN_MS`; a
 * dead node's deliveries fall due when their leases end and are claimed by another node's next
 * pass: within `timeoutMs + LEASE_MARGIN_MS + pollMs` of the node's death.
 */
import { randomUUID } from 'node:crypto';
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import type { SubscriberSource } from './sources.js';
import { claim, complete, DEFAULT_RETRY, dueDeliveries, type Claimed, type RetryPolicy } from './deliveries.js';
import { fanOut, onEventRecorded } from './outbox.js';
import { send } from './sender.js';
import { DEFAULT_RETENTION_MS, PRUNE_BATCH, pruneExpired } from './retention.js';
import { NOTHING_ALLOWED, type AllowedHosts } from './destination.js';
import type { DeliveryRecord } from './records.js';

/** Time a lease outlasts the attempt's timeout (ms): room to record the outcome. */
export const LEASE_MARGIN_MS = 5_000;

/** Settings of a worker (all times in ms). */
export interface WorkerOptions {
  /** This node's name (recorded in leases and attempts). */
  node: string;
  /** Subscriber sources, the same on every node. */
  sources: readonly SubscriberSource[];
  /** Longest attempt (SLIPWAY_WEBHOOK_TIMEOUT). Default 10 s. */
  timeoutMs?: number;
  /** Pause between passes when idle. Default 500. */
  pollMs?: number;
  /** Concurrent attempts per group (app) on this node. Default 2. */
  perGroup?: number;
  /** Concurrent attempts on this node. Default 32. */
  maxInFlight?: number;
  retry?: RetryPolicy;
  /** How long events and finished deliveries are kept (SLIPWAY_WEBHOOK_RETENTION). Default 7 days. */
  retentionMs?: number;
  /** The operator's allowance (SLIPWAY_WEBHOOK_ALLOWED_HOSTS). */
  allowed?: AllowedHosts;
  /** Called after each recorded outcome (metrics, logs: never with secrets). */
  onOutcome?: (delivery: DeliveryRecord) => void;
  /** Called with errors of a pass (store unavailable, …); the worker keeps going. */
  onError?: (e: unknown) => void;
}

/** Engine-clock time between pruning runs (ms), unless the last one found a full batch. */
export const PRUNE_EVERY_MS = 60_000;

/** Due entries looked at per pass: bounds one pass's reads when many deliveries wait. */
const SCAN_LIMIT = 500;

export class DeliveryWorker {
  readonly timeoutMs: number;
  readonly pollMs: number;
  readonly leaseMs: number;
  readonly #perGroup: number;
  readonly #maxInFlight: number;
  readonly #retry: RetryPolicy;
  readonly #allowed: AllowedHosts;
  readonly #inFlight = new Map<string, number>();
  readonly #attempts = new Set<Promise<void>>();
  #total = 0;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<void> | undefined;
  #again = false;
  #stopped = true;
  #unlisten: (() => void) | undefined;
  #nextPrune = 0;

  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly options: WorkerOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.pollMs = options.pollMs ?? 500;
    this.leaseMs = this.timeoutMs + LEASE_MARGIN_MS;
    this.#perGroup = options.perGroup ?? 2;
    this.#maxInFlight = options.maxInFlight ?? 32;
    this.#retry = options.retry ?? DEFAULT_RETRY;
    this.#allowed = options.allowed ?? NOTHING_ALLOWED;
  }

  /** Starts passes (every pollMs, and soon after a local event). */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#unlisten = onEventRecorded(() => this.kick());
    this.kick();
  }

  /** Runs a pass soon (coalesced with one already running). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#pass) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#pass = this.pass().catch((e) => this.options.onError?.(e)).finally(() => {
      this.#pass = undefined;
      if (this.#stopped) return;
      if (this.#again) {
        this.#again = false;
        setImmediate(() => this.kick());
      } else {
        this.#timer = setTimeout(() => this.kick(), this.pollMs);
        this.#timer.unref();
      }
    });
  }

  /** Stops passes and waits for attempts in flight to be recorded. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unlisten?.();
    clearTimeout(this.#timer);
    await this.#pass;
    await Promise.all([...this.#attempts]);
  }

  /** One pass: fan out the outbox, then claim and start due attempts within the bounds. */
  async pass(): Promise<void> {
    const sources = this.options.sources;
    await fanOut(this.metadata, sources, this.clock.now());
    await this.#prune();
    if (this.#total >= this.#maxInFlight) return;
    const now = this.clock.now();
    for (const { dueKey, id, group } of await dueDeliveries(this.metadata, now, SCAN_LIMIT)) {
      if (this.#stopped || this.#total >= this.#maxInFlight) break;
      if ((this.#inFlight.get(group) ?? 0) >= this.#perGroup) continue;
      const token = randomUUID();
      const claimed = await claim(this.metadata, dueKey, id, this.options.node, token, randomUUID(), this.clock.now(), this.leaseMs);
      if (!claimed) continue;
      this.#begin(claimed.delivery.group);
      const p = this.#attempt(claimed, token).catch((e) => this.options.onError?.(e)).finally(() => {
        this.#end(claimed.delivery.group);
        this.#attempts.delete(p);
        this.kick();
      });
      this.#attempts.add(p);
    }
  }

  /** Prunes expired events (retention.ts): at most PRUNE_BATCH per pass, every PRUNE_EVERY_MS unless a backlog remains. */
  async #prune(): Promise<void> {
    const now = this.clock.now();
    if (now < this.#nextPrune) return;
    const { scanned, pruned } = await pruneExpired(this.metadata, now, this.options.retentionMs ?? DEFAULT_RETENTION_MS, PRUNE_BATCH);
    this.#nextPrune = scanned === PRUNE_BATCH && pruned > 0 ? now : now + PRUNE_EVERY_MS;
  }

  #begin(group: string): void {
    this.#total++;
    this.#inFlight.set(group, (this.#inFlight.get(group) ?? 0) + 1);
  }

  #end(group: string): void {
    this.#total--;
    const n = (this.#inFlight.get(group) ?? 1) - 1;
    if (n === 0) this.#inFlight.delete(group);
    else this.#inFlight.set(group, n);
  }

  /** Makes one claimed attempt and records its outcome. */
  async #attempt(claimed: Claimed, token: string): Promise<void> {
    const source = this.options.sources.find((s) => s.kind === claimed.delivery.source);
    let outcome: Awaited<ReturnType<typeof send>> | 'skipped';
    const started = performance.now();
    try {
      const req = source ? await source.request(claimed.event, claimed.delivery) : null;
      outcome = req === null ? 'skipped' : await send(req, Math.min(req.timeoutMs ?? this.timeoutMs, this.timeoutMs), req.allowed ?? this.#allowed);
    } catch (e) {
      outcome = { ok: false, code: null, cause: 'error', detail: e instanceof Error ? e.message.slice(0, 200) : 'request could not be built' };
    }
    if (outcome !== 'skipped') outcome = { ...outcome, durationMs: Math.round(performance.now() - started) };
    const after = await complete(this.metadata, claimed, token, outcome, this.clock.now(), source?.retryPolicy?.(claimed.delivery, this.#retry) ?? this.#retry, Math.random());
    if (after) this.options.onOutcome?.(after);
  }
}
