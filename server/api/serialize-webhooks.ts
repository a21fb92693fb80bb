/**
 * App webhook representations (the platform's app-webhook, app-webhook-delivery and
 * app-webhook-event; docs/webhooks.md) and the event payload envelope delivered to receivers.
 */
import { isoTime } from '../../engine/clock.js';
import type { Accounts } from '../../engine/identity/accounts.js';
import type { AppRecord, FormationRecord, ReleaseRecord } from '../../engine/platform/records.js';
import type { DeliveryRecord, EventRecord, WebhookRecord } from '../../engine/webhooks/records.js';
import type { PayloadRenderer } from '../../engine/webhooks/app-webhooks.js';
import { formationJson, releaseJson } from './serialize-platform.js';
import { appJson } from './serialize.js';

export function webhookJson(w: WebhookRecord, app: Pick<AppRecord, 'id' | 'name'>) {
  return {
    id: w.id, app: { id: app.id, name: app.name }, include: w.include, level: w.level, url: w.url,
    created_at: isoTime(w.createdAt), updated_at: isoTime(w.updatedAt),
  };
}

/** A delivery; `webhookLevel` is the webhook's level when the delivery was made. */
export function deliveryJson(d: DeliveryRecord, event: EventRecord | undefined) {
  const last = d.attempts[d.attempts.length - 1];
  return {
    id: d.id, created_at: isoTime(d.createdAt), updated_at: isoTime(d.updatedAt), status: d.status,
    event: { id: d.eventId, include: event?.entity ?? null },
    webhook: { id: d.subscriberId, level: d.level },
    num_attempts: d.numAttempts,
    next_attempt_at: d.nextAttemptAt === null ? null : isoTime(d.nextAttemptAt),
    last_attempt: last ? {
      id: last.id, code: last.code, error_class: last.cause, status: last.finishedAt === null ? 'in-flight' : last.ok ? 'succeeded' : 'failed',
      created_at: isoTime(last.startedAt), updated_at: isoTime(last.finishedAt ?? last.startedAt),
      // Ours: what went wrong, in a few words (never a secret), and the attempt's duration.
      detail: last.detail, duration_ms: last.finishedAt === null ? null : last.durationMs ?? last.finishedAt - last.startedAt,
    } : null,
  };
}

/** An event with its payload (what receivers get, without `webhook_metadata`). */
export function eventJson(e: EventRecord, payload: Record<string, unknown>) {
  return { id: e.id, include: e.entity, payload, created_at: isoTime(e.createdAt), updated_at: isoTime(e.createdAt) };
}

type Urls = { registry: string };

/**
 * The platform-shaped `data` of a resource an event recorded (release, formation, app, image).
 * The app is the one recorded with the event: `current` of a release is true at the event.
 */
async function resourceJson(e: EventRecord, record: unknown, accounts: Accounts, urls: Urls, webUrl: (app: string) => string): Promise<Record<string, unknown>> {
  const app = { id: e.appId ?? '', name: e.appName ?? '' };
  switch (e.entity) {
    case 'api:release': {
      const r = record as ReleaseRecord;
      return releaseJson(r, { ...app, releaseVersion: r.version } as AppRecord, await accounts.get(r.userId));
    }
    case 'api:formation': return formationJson(record as FormationRecord, app as AppRecord);
    case 'api:app': {
      const a = record as AppRecord;
      return appJson(a, await accounts.get(a.ownerId), urls, webUrl(a.name));
    }
    case 'registry:image': {
      const i = record as { repository: string; digest: string; tag: string | null; configDigest: string | null; mediaType: string | null };
      return {
        app, repository: i.repository, digest: i.digest, tag: i.tag, docker_image: i.configDigest, media_type: i.mediaType,
        registry: `${new URL(urls.registry).host}/${i.repository}`,
      };
    }
    default: return { ...(record as Record<string, unknown>) };
  }
}

/**
 * The payload renderer of app webhooks: the platform's envelope (action, actor, created_at, data,
 * id, previous_data, published_at, resource, sequence, updated_at, version). `previous_data` holds
 * the representation's fields whose values the change altered, with their earlier values.
 */
export function payloadRenderer(accounts: Accounts, vendor: string, urls: Urls, webUrl: (app: string) => string): PayloadRenderer {
  return async (e) => {
    const data = await resourceJson(e, e.data, accounts, urls, webUrl);
    let previous: Record<string, unknown> = {};
    if (e.previousData !== null && typeof e.previousData === 'object') {
      const before = await resourceJson(e, { ...(e.data as object), ...(e.previousData as object) }, accounts, urls, webUrl);
      previous = Object.fromEntries(Object.entries(before).filter(([k, v]) => k !== 'updated_at' && JSON.stringify(v) !== JSON.stringify(data[k])));
    }
    const actor = e.actorId === null ? undefined : await accounts.get(e.actorId);
    return {
      action: e.action, actor: { id: e.actorId, email: actor?.email ?? null },
      created_at: isoTime(e.createdAt), data, id: e.id, previous_data: previous,
      published_at: isoTime(e.createdAt), resource: e.entity.split(':')[1] ?? e.entity, sequence: null,
      updated_at: isoTime(e.createdAt), version: `${vendor}; version=3`,
    };
  };
}
