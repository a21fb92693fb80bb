/**
 * App webhooks (docs/webhooks.md; the platform's app-webhook, app-webhook-delivery and
 * app-webhook-event resources, served under any version-3 Accept, the CLI's `3.webhooks` included):
 * POST/GET /apps/{app}/webhooks, GET/PATCH/DELETE /apps/{app}/webhooks/{id},
 * GET /apps/{app}/webhook-deliveries[/{id}] (`?eq[status]=` filters), GET /apps/{app}/webhook-events[/{id}].
 * The signing secret is returned once, in `Heroku-Webhook-Secret` of the create response.
 */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { readJson, reply } from './respond.js';
import { visibleApp } from './apps.js';
import { paginate, parseRange, rangeHeaders, type RangeSpec } from './range.js';
import { deliveryJson, eventJson, webhookJson } from './serialize-webhooks.js';
import { timeKey } from '../../engine/webhooks/outbox.js';
import { fail } from '../../engine/errors.js';
import type { WebhookInput } from '../../engine/webhooks/app-webhooks.js';
import type { LogWindow } from '../../engine/webhooks/log-window.js';
import type { EventRecord } from '../../engine/webhooks/records.js';

/** Sortable properties of delivery and event lists: `seq` is creation order (what the CLI asks for). */
const RANGES = ['seq', 'id', 'created_at'] as const;
const STATUSES = new Set(['pending', 'scheduled', 'retrying', 'succeeded', 'failed', 'skipped']);

/** The body fields of a create or update request. */
function input(body: Record<string, unknown>): WebhookInput {
  return { include: body.include, level: body.level, url: body.url, secret: body.secret, authorization: body.authorization };
}

export async function createWebhook(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const { webhook, secret } = await ctx.webhooks.create(app.id, input(await readJson(call.ex)));
  reply(ctx, call, 201, webhookJson(webhook, app), { headers: { 'heroku-webhook-secret': secret } });
}

export async function listWebhooks(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  reply(ctx, call, 200, (await ctx.webhooks.list(app.id)).map((w) => webhookJson(w, app)));
}

export async function getWebhook(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  reply(ctx, call, 200, webhookJson(await ctx.webhooks.get(app.id, call.params.webhook!), app));
}

export async function updateWebhook(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const w = await ctx.webhooks.update(app.id, call.params.webhook!, input(await readJson(call.ex)));
  reply(ctx, call, 200, webhookJson(w, app));
}

export async function deleteWebhook(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  reply(ctx, call, 200, webhookJson(await ctx.webhooks.remove(app.id, call.params.webhook!), app));
}

/** The window of a Range in `seq` order (the index's order: read from the store, not sorted here). */
function windowOf(spec: RangeSpec): LogWindow {
  return { from: spec.start, fromExclusive: spec.startExclusive, to: spec.end, toExclusive: spec.endExclusive, order: spec.order, limit: spec.max };
}

/** The status and Range headers of a page read as a window: its items' `seq`s, and where the next page resumes (null: none). */
function windowPage(spec: RangeSpec, seqs: readonly string[], resumeAfter: string | null): { status: 200 | 206; headers: Record<string, string> } {
  return { status: resumeAfter === null ? 200 : 206, headers: rangeHeaders(spec, RANGES, seqs, resumeAfter) };
}

/**
 * Lists the app's deliveries. In `seq` order (the default, and the CLI's `order=desc,max=1000`:
 * the most recent ones) each page is a window of the log read from the store, however long the
 * log; by `id` or `created_at`, the app's oldest 1000 deliveries are sorted and cut.
 */
export async function listDeliveries(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const spec = parseRange(call.ex.header('range'), RANGES);
  const status = call.ex.query.get('eq[status]');
  if (status !== null && !STATUSES.has(status)) throw fail('INVALID_PARAMS', `status must be one of ${[...STATUSES].join(', ')}`);
  if (spec.property === 'seq') {
    const { items, resumeAfter } = await ctx.webhooks.deliveryWindow(app.id, windowOf(spec), status);
    const page = windowPage(spec, items.map((d) => d.seq), resumeAfter);
    reply(ctx, call, page.status, items.map((d) => deliveryJson(d.delivery, d.event)), { headers: page.headers });
    return;
  }
  const all = (await ctx.webhooks.deliveries(app.id)).filter((d) => status === null || d.delivery.status === status);
  const page = paginate(all, spec, RANGES, ({ delivery: d }, prop) => (prop === 'id' ? d.id : timeKey(d.createdAt)));
  reply(ctx, call, page.status, page.items.map((d) => deliveryJson(d.delivery, d.event)), { headers: page.headers });
}

export async function getDelivery(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const { delivery, event } = await ctx.webhooks.delivery(app.id, call.params.delivery!);
  reply(ctx, call, 200, deliveryJson(delivery, event));
}

/** Lists the app's events: in `seq` order a window of the log read from the store (as deliveries); by `id` or `created_at`, the oldest 1000 sorted and cut. */
export async function listEvents(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const spec = parseRange(call.ex.header('range'), RANGES);
  let list: EventRecord[], status: 200 | 206, headers: Record<string, string>;
  if (spec.property === 'seq') {
    const { items, resumeAfter } = await ctx.webhooks.eventWindow(app.id, windowOf(spec));
    list = items.map((i) => i.value);
    ({ status, headers } = windowPage(spec, items.map((i) => i.seq), resumeAfter));
  } else {
    const page = paginate(await ctx.webhooks.events(app.id), spec, RANGES, (e, prop) => (prop === 'id' ? e.id : timeKey(e.createdAt)));
    ({ items: list, status, headers } = page);
  }
  reply(ctx, call, status, await Promise.all(list.map(async (e) => eventJson(e, await ctx.webhooks.render(e)))), { headers });
}

export async function getEvent(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const e = await ctx.webhooks.event(app.id, call.params.event!);
  reply(ctx, call, 200, eventJson(e, await ctx.webhooks.render(e)));
}
