/**
 * The delivery worker (docs/webhooks.md "Engine"): one per node, in the background, never on a
 * request path. Each pass prunes events past their retention (retention.ts, a bounded batch at
 * most once a minute), then in one transaction fans a batch of the outbox out (outbox.ts
 * `fanOutIn`), records the outcomes of the attempts finished since the last pass and claims the
 * due deliveries that fit in the slots (deliveries.ts `settleAndClaimIn`), and starts their
 * attempts concurrently: at most `perGroup` at a time per group (app) and `maxInFlight` in
 * all on this node, so a slow receiver holds back only its own app. A slot is free once its
 * attempt's outcome is recorded. Passes run every `pollMs`, sooner after a local `recordEvent` or
 * a finished attempt, but at most one per `gapMs`; a busy worker thus makes one commit for a burst
 * of events and outcomes, not three per delivery.
 *
 * Bounds: an attempt ends within `timeoutMs`; its lease lasts `timeoutMs + LEASE_MARGIN_MS`; a
 * dead node's deliveries fall due when their leases end and are claimed by another node's next
 * pass: within `timeoutMs + LEASE_MARGIN_MS + pollMs` of the node's death.
 */
import { randomUUID } from 'node:crypto';
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import type { SubscriberSource } from './sources.js';
import { DEFAULT_RETRY, dueDeliveries, settleAndClaim, settleAndClaimIn, type AttemptOutcome, type Claimed, type ClaimRequest, type Completion, type PassResult, type RetryPolicy } from './deliveries.js';
import { FAN_OUT_BATCH, fanOutIn, onEventRecorded, outboxEntries } from './outbox.js';
import { send, type Sender } from './sender.js';
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
  /**
   * Least time between the starts of two passes, ms (default PASS_GAP_MS): a burst of events and
   * finished attempts shares one pass's commits instead of each making its own.
   */
  gapMs?: number;
  /** Concurrent attempts per group (app) on this node. Default 8. */
  perGroup?: number;
  /** Concurrent attempts on this node. Default 32. */
  maxInFlight?: number;
  retry?: RetryPolicy;
  /** How long events and finished deliveries are kept (SLIPWAY_WEBHOOK_RETENTION). Default 7 days. */
  retentionMs?: number;
  /** The operator's allowance (SLIPWAY_WEBHOOK_ALLOWED_HOSTS). */
  allowed?: AllowedHosts;
  /**
   * What makes the attempts' HTTP exchanges. Default: `send` on this thread; the server uses the
   * sender thread (workers/sender-thread.ts), so a burst of deliveries does not run beside the
   * requests that made their events.
   */
  send?: Sender;
  /** Called after each recorded outcome (metrics, logs: never with secrets). */
  onOutcome?: (delivery: DeliveryRecord) => void;
  /** Called with errors of a pass (store unavailable, …); the worker keeps going. */
  onError?: (e: unknown) => void;
}

/** Engine-clock time between pruning runs (ms), unless the last one found a full batch. */
export const PRUNE_EVERY_MS = 60_000;

/**
 * Default least time between the starts of two passes (ms). Every pass that has work commits once
 * (fan-out, outcomes and claims together), and the node's metadata writes are one at a time (LMDB
 * has one writer, each commit synced to disk), so passes run back to back put a worker commit in
 * front of nearly every request's. Measured with `npm run bench:webhooks` on a loaded machine
 * (docs/webhooks.md "Release latency with webhooks"): a hooked app's release p50 was 0.76 × that
 * of an app without webhooks with passes 20 ms apart, 0.86–0.90 at 50 ms and 1.00 at 100 ms, where
 * deliveries no longer kept up with releases (2 attempts per app per pass); on a quiet machine, at
 * 50 ms with 8 attempts per app, 0.92–1.06 with delivery keeping up (0.98–0.99). An event waits at
 * most this long more before its attempt starts, and an app's deliveries are bounded by
 * `perGroup` attempts per pass (8 per 50 ms: 160 a second to a receiver that answers at once).
 */
export const PASS_GAP_MS = 50;

/** Due entries looked at per pass: bounds one pass's reads when many deliveries wait. */
const SCAN_LIMIT = 500;

export class DeliveryWorker {
  readonly timeoutMs: number;
  readonly pollMs: number;
  readonly gapMs: number;
  readonly leaseMs: number;
  /** Concurrent attempts per group (app) on this node. */
  readonly perGroup: number;
  readonly #maxInFlight: number;
  readonly #retry: RetryPolicy;
  readonly #allowed: AllowedHosts;
  readonly #send: Sender;
  readonly #inFlight = new Map<string, number>();
  readonly #attempts = new Set<Promise<void>>();
  #total = 0;
  #timer: NodeJS.Timeout | undefined;
  /** `#timer` waits for the gap (not an idle poll). */
  #gapTimer = false;
  /** performance.now() when the last pass started. */
  #lastStart = -Infinity;
  #pass: Promise<void> | undefined;
  #again = false;
  #stopped = true;
  #unlisten: (() => void) | undefined;
  /** Outcomes of finished attempts, recorded by the next pass. */
  readonly #finished: Array<{ completion: Completion; resolve: (d: DeliveryRecord | null) => void; reject: (e: unknown) => void }> = [];
  #nextPrune = 0;

  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly options: WorkerOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.pollMs = options.pollMs ?? 500;
    this.gapMs = options.gapMs ?? PASS_GAP_MS;
    this.leaseMs = this.timeoutMs + LEASE_MARGIN_MS;
    this.perGroup = options.perGroup ?? 8;
    this.#maxInFlight = options.maxInFlight ?? 32;
    this.#retry = options.retry ?? DEFAULT_RETRY;
    this.#allowed = options.allowed ?? NOTHING_ALLOWED;
    this.#send = options.send ?? send;
  }

  /** Starts passes (every pollMs, and soon after a local event). */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#unlisten = onEventRecorded(() => this.kick());
    this.kick();
  }

  /**
   * Runs a pass soon: coalesced with one already running or waiting, and no sooner than `gapMs`
   * after the last pass started; once stopped, at once and only to record outcomes.
   */
  kick(): void {
    if (this.#stopped && this.#finished.length === 0) return;
    if (this.#pass) {
      this.#again = true;
      return;
    }
    const wait = this.#lastStart + this.gapMs - performance.now();
    if (wait > 0 && !this.#stopped) {
      if (this.#gapTimer) return;
      clearTimeout(this.#timer);
      this.#gapTimer = true;
      this.#timer = setTimeout(() => {
        this.#gapTimer = false;
        this.kick();
      }, wait);
      return;
    }
    clearTimeout(this.#timer);
    this.#gapTimer = false;
    this.#lastStart = performance.now();
    this.#pass = this.pass().catch((e) => this.options.onError?.(e)).finally(() => {
      this.#pass = undefined;
      if (this.#again || this.#finished.length > 0) {
        this.#again = false;
        setImmediate(() => this.kick());
      } else if (!this.#stopped) {
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
    this.#gapTimer = false;
    // Outcomes that waited for the gap's timer (cleared above) are recorded now.
    if (this.#finished.length > 0) this.kick();
    await this.#pass;
    await Promise.all([...this.#attempts]);
  }

  /**
   * One pass: prune expired events (retention.ts), then, in one transaction, fan out the oldest
   * FAN_OUT_BATCH events of the outbox, record the finished attempts' outcomes and claim the due
   * deliveries that fit within the bounds (the ones just made included), and start their
   * attempts: one commit a pass, so the worker's commits stay few beside the requests' (the node's
   * metadata writes are one at a time). Once stopped: only the outcomes. If that transaction
   * fails while fanning out, the outcomes and claims are committed without the fan-out, which the
   * next pass tries again.
   */
  async pass(): Promise<void> {
    // A failed prune is retried by the next pass; the outcomes waiting are recorded regardless.
    if (!this.#stopped) await this.#prune().catch((e) => this.options.onError?.(e));
    const entries = this.#stopped ? [] : await outboxEntries(this.metadata).catch((e) => {
      this.options.onError?.(e);
      return [];
    });
    const finished = this.#finished.splice(0);
    const completions = finished.map((f) => f.completion);
    let result: PassResult;
    try {
      const slots = this.#slotsAfter(finished);
      const requests = this.#stopped ? [] : await this.#dueClaims(slots);
      if (entries.length === 0 && completions.length === 0 && requests.length === 0) return;
      const now = this.clock.now();
      // Lease tokens and attempt ids for the deliveries the fan-out makes, chosen before the
      // transaction so a body that runs again names them alike.
      const ids = entries.length === 0 ? [] : Array.from({ length: slots.free }, () => ({ token: randomUUID(), attemptId: randomUUID() }));
      try {
        result = await this.metadata.transact(async (tx) => {
          const made = await fanOutIn(tx, this.options.sources, entries, now);
          const more = slots.copy().take(made, ids);
          return settleAndClaimIn(tx, completions, [...requests, ...more], this.options.node, now, this.leaseMs);
        });
        if (entries.length === FAN_OUT_BATCH) this.#again = true; // more events wait: another pass soon
      } catch (e) {
        if (entries.length === 0) throw e;
        this.options.onError?.(e);
        result = await settleAndClaim(this.metadata, completions, requests, this.options.node, now, this.leaseMs);
      }
    } catch (e) {
      for (const f of finished) f.reject(e); // their deliveries fall due again when their leases end
      throw e;
    }
    finished.forEach((f, i) => f.resolve(result.settled[i]!));
    for (const { claimed, token } of result.claims) {
      this.#begin(claimed.delivery.group);
      const p = this.#attempt(claimed, token).catch((e) => this.options.onError?.(e)).finally(() => {
        this.#end(claimed.delivery.group);
        this.#attempts.delete(p);
        this.kick();
      });
      this.#attempts.add(p);
    }
  }

  /** The slots free once `finished`'s outcomes are recorded (freed in the same commit). */
  #slotsAfter(finished: ReadonlyArray<{ completion: Completion }>): Slots {
    const planned = new Map(this.#inFlight);
    for (const { completion: { claimed } } of finished) planned.set(claimed.delivery.group, (planned.get(claimed.delivery.group) ?? 1) - 1);
    return new Slots(planned, this.#total - finished.length, this.perGroup, this.#maxInFlight);
  }

  /** The due deliveries to claim, oldest first: as many as fit in `slots` (which they take). */
  async #dueClaims(slots: Slots): Promise<ClaimRequest[]> {
    if (slots.free === 0) return [];
    const due = await dueDeliveries(this.metadata, this.clock.now(), SCAN_LIMIT);
    // Ids for as many claims as can be taken, not one per due entry scanned (up to SCAN_LIMIT).
    return slots.take(due, Array.from({ length: Math.min(slots.free, due.length) }, () => ({ token: randomUUID(), attemptId: randomUUID() })));
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

  /** Makes one claimed attempt and has the next pass record its outcome. */
  async #attempt(claimed: Claimed, token: string): Promise<void> {
    const source = this.options.sources.find((s) => s.kind === claimed.delivery.source);
    let outcome: AttemptOutcome | 'skipped';
    const started = performance.now();
    try {
      const req = source ? await source.request(claimed.event, claimed.delivery) : null;
      outcome = req === null ? 'skipped' : await this.#send(req, Math.min(req.timeoutMs ?? this.timeoutMs, this.timeoutMs), req.allowed ?? this.#allowed);
    } catch (e) {
      outcome = { ok: false, code: null, cause: 'error', detail: e instanceof Error ? e.message.slice(0, 200) : 'request could not be built' };
    }
    if (outcome !== 'skipped') outcome = { ...outcome, durationMs: Math.round(performance.now() - started) };
    const completion: Completion = { claimed, token, outcome, policy: source?.retryPolicy?.(claimed.delivery, this.#retry) ?? this.#retry, random: Math.random() };
    const recorded = new Promise<DeliveryRecord | null>((resolve, reject) => this.#finished.push({ completion, resolve, reject }));
    this.kick();
    const after = await recorded;
    if (after) this.options.onOutcome?.(after);
  }
}

/**
 * The attempt slots of one pass: attempts planned per group (app) and in all, against the
 * worker's bounds (`perGroup`, `maxInFlight`). `take` fills them in the order given.
 */
class Slots {
  readonly #seen = new Set<string>();
  constructor(readonly planned: Map<string, number>, public total: number, readonly perGroup: number, readonly maxInFlight: number) {}

  /** Attempts that may still start in this pass. */
  get free(): number {
    return Math.max(0, this.maxInFlight - this.total);
  }

  /** A copy to plan on (a transaction body may run more than once). */
  copy(): Slots {
    const c = new Slots(new Map(this.planned), this.total, this.perGroup, this.maxInFlight);
    for (const id of this.#seen) c.#seen.add(id);
    return c;
  }

  /**
   * Claim requests for the deliveries of `found` that fit, in order, using `ids[i]` for the i-th
   * one taken (at least as many ids as it can take: the free slots, or `found` if fewer).
   */
  take(found: ReadonlyArray<{ dueKey: string; id: string; group: string }>, ids: ReadonlyArray<{ token: string; attemptId: string }>): ClaimRequest[] {
    const out: ClaimRequest[] = [];
    for (const { dueKey, id, group } of found) {
      if (this.free === 0) break;
      if ((this.planned.get(group) ?? 0) >= this.perGroup || this.#seen.has(id)) continue;
      this.planned.set(group, (this.planned.get(group) ?? 0) + 1);
      this.#seen.add(id);
      this.total++;
      out.push({ dueKey, id, ...ids[out.length]! });
    }
    return out;
  }
}
