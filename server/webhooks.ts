/**
 * The node's app webhooks and delivery worker, built from the config (docs/webhooks.md): the
 * `webhooks.*` settings become the destination allowance, the attempt timeout, the poll interval,
 * the retry policy and the log's retention. The worker is started once the listeners are bound and stopped before the
 * store closes.
 */
import type { Config } from './config.js';
import type { Logger } from './log.js';
import type { MetadataStore } from '../engine/storage/metadata.js';
import type { Clock } from '../engine/clock.js';
import type { ServerKeys } from '../engine/identity/keys.js';
import type { Accounts } from '../engine/identity/accounts.js';
import { AppWebhooks } from '../engine/webhooks/app-webhooks.js';
import { DeliveryWorker } from '../engine/webhooks/worker.js';
import { SenderThread } from '../workers/sender-thread.js';
import { DEFAULT_RETRY } from '../engine/webhooks/deliveries.js';
import { parseAllowedHosts } from '../engine/webhooks/destination.js';
import { payloadRenderer } from './api/serialize-webhooks.js';
import type { SubscriberSource } from '../engine/webhooks/sources.js';
import type { DeliveryRecord } from '../engine/webhooks/records.js';

/**
 * The app webhooks service and this node's delivery worker (not started), whose attempts' HTTP
 * exchanges run on `sender` (close it after the worker has stopped).
 * @param other further subscriber sources (registry notifications: docs/notifications.md) and
 *        what to do after each of their deliveries' outcomes
 */
export function webhooksOf(config: Config, metadata: MetadataStore, clock: Clock, keys: ServerKeys, accounts: Accounts, urls: { registry: string }, webUrl: (app: string) => string, log: Logger,
  other: { sources: SubscriberSource[]; onOutcome(d: DeliveryRecord): void } = { sources: [], onOutcome: () => {} }): { webhooks: AppWebhooks; worker: DeliveryWorker; sender: SenderThread } {
  const allowed = parseAllowedHosts(config.webhookAllowedHosts);
  const webhooks = new AppWebhooks(metadata, clock, keys, payloadRenderer(accounts, `application/vnd.${config.vendor}+json`, urls, webUrl), allowed);
  const sender = new SenderThread();
  const worker = new DeliveryWorker(metadata, clock, {
    node: config.nodeName, sources: [webhooks, ...other.sources], allowed, send: sender.send,
    timeoutMs: config.webhookTimeoutSeconds * 1000, pollMs: config.webhookPollSeconds * 1000,
    retry: { ...DEFAULT_RETRY, baseMs: config.webhookRetryBaseSeconds * 1000, horizonMs: config.webhookRetryHorizonSeconds * 1000 },
    retentionMs: config.webhookRetentionSeconds * 1000,
    onOutcome: (d) => {
      other.onOutcome(d);
      log.debug({ delivery: d.id, event: d.eventId, status: d.status, attempts: d.numAttempts, cause: d.attempts.at(-1)?.cause ?? null }, 'webhook delivery attempt');
    },
    onError: (e) => log.warn({ err: e }, 'webhook delivery pass failed'),
  });
  return { webhooks, worker, sender };
}
