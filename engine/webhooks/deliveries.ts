/**
 * Delivery state changes (docs/webhooks.md "Engine"), made by `settleAndClaim` in one serializable
 * transaction per worker pass, so on a shared PostgreSQL only one node holds a delivery at a time:
 * - a claim takes a due delivery for one attempt under a lease (`lease.until`): it counts the
 *   attempt and moves the delivery's due entry to the lease's end. A node that dies mid-attempt
 *   thus leaves a delivery that falls due again when its lease expires, and the next claim
 *   records the lost attempt as `interrupted`.
 * - a completion records the attempt's outcome, only while the caller still holds the lease, and
 *   schedules the next attempt (`sync`, with backoff, until the horizon) or ends the delivery.
 */
import { key, type MetadataReader, type MetadataStore, type MetadataTransaction } from '../storage/metadata.js';
import type { AttemptCause, AttemptRecord, DeliveryRecord, EventRecord } from './records.js';
import { MAX_ATTEMPTS_KEPT } from './records.js';
import { deliveries, deliveriesByGroup, due, events, eventsByApp } from './keyspaces.js';
import { lastPart, timeKey } from './outbox.js';

/** Retry policy of `sync` deliveries (ms). */
export interface RetryPolicy {
  /** Delay before the second attempt; each later one doubles it. */
  baseMs: number;
  /** Longest delay between two attempts. */
  capMs: number;
  /** No attempt starts later than this after the delivery was created: it is `failed` then. */
  horizonMs: number;
  /**
   * Failed attempts after which the delay starts doubling (default 1: from the first); until
   * then each retry waits `baseMs` (distribution's `threshold` of registry notifications).
   */
  steady?: number;
}

/** Default retry policy: 30 s, doubling to 1 h between attempts, for up to 24 h (docs/webhooks.md). */
export const DEFAULT_RETRY: RetryPolicy = { baseMs: 30_000, capMs: 3_600_000, horizonMs: 24 * 3_600_000 };

/**
 * Delay before attempt `n + 1` after `n` failed attempts: baseMs·2^(n−1), at most capMs, minus up
 * to 20 % of jitter drawn from `random` (0..1) so retries of many deliveries spread out.
 */
export function retryDelay(policy: RetryPolicy, n: number, random: number): number {
  const d = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(30, Math.max(0, n - (policy.steady ?? 1))));
  return Math.max(1, Math.round(d * (1 - 0.2 * random)));
}

/** A delivery claimed for one attempt, with its event. */
export interface Claimed {
  delivery: DeliveryRecord;
  event: EventRecord;
  attempt: AttemptRecord;
}

/** Due deliveries (`dueAt <= now`), oldest first: their ids and groups, to claim (`settleAndClaim`). */
export async function dueDeliveries(reader: MetadataReader, now: number, limit: number): Promise<Array<{ dueKey: string; id: string; group: string }>> {
  return (await reader.range(due, { end: key(timeKey(now + 1)), limit })).map((e) => ({ dueKey: e.key, id: lastPart(e.key), group: e.value }));
}

/** A due delivery to claim: where it was found, and the lease token and attempt id chosen for it (before `transact`). */
export interface ClaimRequest {
  dueKey: string;
  id: string;
  token: string;
  attemptId: string;
}

/**
 * Claims delivery `id` (found at `dueKey`) for one attempt by `node` until `now + leaseMs`, in `tx`.
 * @returns the claim, or null when another node claimed or finished it first (or it no longer exists).
 */
async function claimIn(tx: MetadataTransaction, { dueKey, id, token, attemptId }: ClaimRequest, node: string, now: number, leaseMs: number): Promise<Claimed | null> {
  if (await tx.get(due, dueKey) === undefined) return null;
  const d = await tx.get(deliveries, id);
  const event = d && await tx.get(events, d.eventId);
  if (!d || !event || d.status === 'succeeded' || d.status === 'failed' || d.status === 'skipped') {
    tx.remove(due, dueKey);
    return null;
  }
  if (d.lease && d.lease.until > now) return null;
  tx.remove(due, dueKey);
  let attempts = d.attempts;
  const last = attempts[attempts.length - 1];
  if (d.lease && last && last.finishedAt === null) {
    // The holder's lease expired without an outcome: that attempt was interrupted.
    attempts = [...attempts.slice(0, -1), { ...last, finishedAt: now, cause: 'interrupted', detail: `lease of node ${d.lease.node} expired` }];
    if (d.level === 'notify') {
      tx.put(deliveries, id, { ...d, attempts, lease: null, status: 'failed', nextAttemptAt: null, updatedAt: now });
      return null;
    }
  }
  const attempt: AttemptRecord = { id: attemptId, number: d.numAttempts + 1, node, startedAt: now, finishedAt: null, code: null, ok: false, cause: null, detail: null };
  const until = now + leaseMs;
  const delivery: DeliveryRecord = {
    ...d, numAttempts: d.numAttempts + 1, status: d.numAttempts === 0 ? 'pending' : 'retrying', nextAttemptAt: null,
    lease: { node, token, until }, attempts: [...attempts, attempt].slice(-MAX_ATTEMPTS_KEPT), updatedAt: now,
  };
  tx.put(deliveries, id, delivery);
  tx.put(due, key(timeKey(until), id), d.group);
  return { delivery, event, attempt };
}

/** The outcome of one attempt, as the sender reports it. */
export interface AttemptOutcome {
  ok: boolean;
  code: number | null;
  cause: AttemptCause | null;
  detail: string | null;
  /** How long the attempt took, ms, on the monotonic clock (the engine clock may be a test's). */
  durationMs?: number;
}

/** One attempt's outcome to record: the attempt claimed as `claimed` under lease `token`. */
export interface Completion {
  claimed: Claimed;
  token: string;
  outcome: AttemptOutcome | 'skipped';
  policy: RetryPolicy;
  /** 0..1, the retry delay's jitter. */
  random: number;
}

/** What `settleAndClaimIn` did: per completion, the delivery after it (null: lease lost); the claims made, each with its token. */
export interface PassResult {
  settled: Array<DeliveryRecord | null>;
  claims: Array<{ claimed: Claimed; token: string }>;
}

/**
 * One commit of a worker pass: records `completions` (all at `now`), then claims the deliveries
 * of `requests`, in one transaction instead of one each. The caller bounds both lists (the worker: its attempts in flight, at most 32).
 * @returns per completion, in order, the delivery after the change or null when its lease was
 * lost; and the claims made, in request order, each with its token (requests another node
 * claimed or finished first are left out).
 */
export async function settleAndClaim(metadata: MetadataStore, completions: readonly Completion[], requests: readonly ClaimRequest[], node: string, now: number, leaseMs: number): Promise<PassResult> {
  if (completions.length === 0 && requests.length === 0) return { settled: [], claims: [] };
  return metadata.transact((tx) => settleAndClaimIn(tx, completions, requests, node, now, leaseMs));
}

/** `settleAndClaim` inside `tx` (the worker's pass transaction, which may also fan out: outbox.ts `fanOutIn`). */
export async function settleAndClaimIn(tx: MetadataTransaction, completions: readonly Completion[], requests: readonly ClaimRequest[], node: string, now: number, leaseMs: number): Promise<PassResult> {
  const settled: Array<DeliveryRecord | null> = [];
  for (const c of completions) settled.push(await completeIn(tx, c, now));
  const claims: Array<{ claimed: Claimed; token: string }> = [];
  for (const r of requests) {
    const claimed = await claimIn(tx, r, node, now, leaseMs);
    if (claimed) claims.push({ claimed, token: r.token });
  }
  return { settled, claims };
}

/**
 * Records a completion's outcome in `tx`, if its token still holds the lease: success ends the
 * delivery; a failure ends a `notify` delivery and schedules a `sync` one's next attempt
 * (RetryPolicy) unless that would start past its horizon. `skipped` ends it unattempted.
 * @returns the delivery after the change, or null when the lease was lost (nothing written).
 */
async function completeIn(tx: MetadataTransaction, { claimed, token, outcome, policy, random }: Completion, now: number): Promise<DeliveryRecord | null> {
  const { id } = claimed.delivery;
  const d = await tx.get(deliveries, id);
  if (!d || d.lease?.token !== token) return null;
  tx.remove(due, key(timeKey(d.lease.until), id));
  const base = { ...d, lease: null, updatedAt: now };
  if (outcome === 'skipped') {
    const next: DeliveryRecord = { ...base, status: 'skipped', nextAttemptAt: null, numAttempts: d.numAttempts - 1, attempts: d.attempts.filter((a) => a.id !== claimed.attempt.id) };
    tx.put(deliveries, id, next);
    return next;
  }
  const attempts = d.attempts.map((a) => (a.id === claimed.attempt.id ? { ...a, finishedAt: now, ...outcome } : a));
  let next: DeliveryRecord;
  if (outcome.ok) next = { ...base, attempts, status: 'succeeded', nextAttemptAt: null };
  else {
    const at = now + retryDelay(policy, d.numAttempts, random);
    if (d.level === 'notify' || at > d.createdAt + policy.horizonMs) next = { ...base, attempts, status: 'failed', nextAttemptAt: null };
    else {
      next = { ...base, attempts, status: 'scheduled', nextAttemptAt: at };
      tx.put(due, key(timeKey(at), id), d.group);
    }
  }
  tx.put(deliveries, id, next);
  return next;
}

/** One delivery by id, or undefined. */
export function getDelivery(reader: MetadataReader, id: string): Promise<DeliveryRecord | undefined> {
  return reader.get(deliveries, id);
}

/** One event by id, or undefined. */
export function getEvent(reader: MetadataReader, id: string): Promise<EventRecord | undefined> {
  return reader.get(events, id);
}

/** A group's (an app's) deliveries, oldest first (at most `limit`; with `newestFirst`, the newest `limit`, newest first). */
export async function deliveriesOf(reader: MetadataReader, group: string, limit = 1000, newestFirst = false): Promise<DeliveryRecord[]> {
  const ids = await reader.range(deliveriesByGroup, { prefix: group, limit, reverse: newestFirst });
  const out = await reader.getMany(ids.map((e) => [deliveries, e.value] as const));
  return out.filter((d): d is DeliveryRecord => d !== undefined);
}

/** An app's events, oldest first (at most `limit`). */
export async function eventsOf(reader: MetadataReader, appId: string, limit = 1000): Promise<EventRecord[]> {
  const ids = await reader.range(eventsByApp, { prefix: appId, limit });
  const out = await reader.getMany(ids.map((e) => [events, e.value] as const));
  return out.filter((e): e is EventRecord => e !== undefined);
}
