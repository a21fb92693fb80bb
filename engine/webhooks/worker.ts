/**
 * The delivery worker (docs/webhooks.md "Engine"): one per node, in the background, never on a
 * request path. Each pass fans the outbox out (outbox.ts, a batch of events per transaction), then
 * claims due deliveries (deliveries.ts, all of the pass's claims in one transaction) and makes
 * their attempts concurrently, at most `perGroup` at a time per group (app) and `maxInFlight` in
 * all on this node, so a slow receiver holds back only its own app; outcomes are recorded in group
 * commits (outcomes.ts).
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
import { claimMany, DEFAULT_RETRY, dueDeliveries, type Claimed, type ClaimRequest, type RetryPolicy } from './deliveries.js';
import { OutcomeRecorder } from './outcomes.js';
import { fanOut, onEventRecorded } from './outbox.js';
import { send } from './sender.js';
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
  /** The operator's allowance (SLIPWAY_WEBHOOK_ALLOWED_HOSTS). */
  allowed?: AllowedHosts;
  /** Called after each recorded outcome (metrics, logs: never with secrets). */
  onOutcome?: (delivery: DeliveryRecord) => void;
  /** Called with errors of a pass (store unavailable, …); the worker keeps going. */
  onError?: (e: unknown) => void;
}

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
  readonly #outcomes: OutcomeRecorder;

  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly options: WorkerOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.pollMs = options.pollMs ?? 500;
    this.leaseMs = this.timeoutMs + LEASE_MARGIN_MS;
    this.#perGroup = options.perGroup ?? 2;
    this.#maxInFlight = options.maxInFlight ?? 32;
    this.#retry = options.retry ?? DEFAULT_RETRY;
    this.#allowed = options.allowed ?? NOTHING_ALLOWED;
    this.#outcomes = new OutcomeRecorder(metadata, clock);
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

  /**
   * One pass: fan out the outbox (one transaction per FAN_OUT_BATCH events), then claim the due
   * deliveries that fit within the bounds in one transaction, and start their attempts.
   */
  async pass(): Promise<void> {
    const sources = this.options.sources;
    await fanOut(this.metadata, sources, this.clock.now());
    if (this.#stopped || this.#total >= this.#maxInFlight) return;
    const now = this.clock.now();
    const planned = new Map(this.#inFlight);
    const seen = new Set<string>();
    const requests: ClaimRequest[] = [];
    for (const { dueKey, id, group } of await dueDeliveries(this.metadata, now, SCAN_LIMIT)) {
      if (this.#total + requests.length >= this.#maxInFlight) break;
      if ((planned.get(group) ?? 0) >= this.#perGroup || seen.has(id)) continue;
      planned.set(group, (planned.get(group) ?? 0) + 1);
      seen.add(id);
      requests.push({ dueKey, id, token: randomUUID(), attemptId: randomUUID() });
    }
    // Attempts only end while the claim commits (no pass runs alongside): the planned slots stay free.
    for (const { claimed, token } of await claimMany(this.metadata, requests, this.options.node, this.clock.now(), this.leaseMs)) {
      this.#begin(claimed.delivery.group);
      const p = this.#attempt(claimed, token).catch((e) => this.options.onError?.(e)).finally(() => {
        this.#end(claimed.delivery.group);
        this.#attempts.delete(p);
        this.kick();
      });
      this.#attempts.add(p);
    }
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
    const after = await this.#outcomes.record({ claimed, token, outcome, policy: source?.retryPolicy?.(claimed.delivery, this.#retry) ?? this.#retry, random: Math.random() });
    if (after) this.options.onOutcome?.(after);
  }
}
