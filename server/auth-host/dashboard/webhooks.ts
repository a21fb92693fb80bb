/**
 * An app's webhooks in the dashboard (docs/webhooks.md; docs/user-guide.md "Dashboard"), the
 * actions of the /apps/{app}/webhooks API routes (server/api/webhooks.ts) by the same engine calls
 * (AppWebhooks.create, update, remove) and the same access rules (the route's scope need, then
 * visibleApp: role and the third-party rule):
 *   GET  /apps/:app/webhooks                    the app's webhooks and the form to add one
 *   POST /apps/:app/webhooks                    add (a generated signing secret is shown once)
 *   GET  /apps/:app/webhooks/:webhook           one webhook: edit form, remove, recent deliveries
 *   POST /apps/:app/webhooks/:webhook           save URL, entities and level
 *   POST /apps/:app/webhooks/:webhook/remove    remove (confirmed)
 * The signing secret and the Authorization value are never put in a page (a refused form shows
 * URL, entities and level again, never what was typed in those two), except a secret the platform
 * generated, once, in the response of the add form (a one-time form: reloading shows it no more).
 */
import type { AuthContext } from '../context.js';
import type { AppRecord } from '../../../engine/platform/records.js';
import type { DeliveryRecord, EventRecord, WebhookRecord } from '../../../engine/webhooks/records.js';
import { APP_WEBHOOK_ENTITIES, type WebhookInput } from '../../../engine/webhooks/app-webhooks.js';
import { visibleApp } from '../../api/apps.js';
import {
  allowed, appPlace, attempt, confirmOr, done, firstSubmission, noticeOf, sendDashboard, showSecret, when,
  type FormState, type Signed, type Submitted,
} from './page.js';
import { showPage, submitForm } from './handler.js';

/** Deliveries shown on a webhook's page, newest first (GET /apps/{app}/webhook-deliveries lists more). */
export const RECENT_DELIVERIES = 20;

/** Form fields, in the order the engine's messages name them. */
const FIELDS = ['include', 'level', 'url', 'secret', 'authorization'] as const;

/** What a person reads of each entity next to its checkbox. */
const ENTITY_WORDS: Record<(typeof APP_WEBHOOK_ENTITIES)[number], string> = {
  'api:app': 'the app itself (created, changed, destroyed)',
  'api:collaborator': 'collaborators added or removed',
  'api:formation': 'process types scaled or resized',
  'api:release': 'releases (deploys, config var changes, rollbacks)',
  'registry:image': 'images pushed to or deleted from the app\'s registry',
};

/** A webhook as the pages show it: never its secret nor its Authorization value. */
export interface WebhookRow {
  id: string;
  url: string;
  include: string[];
  level: string;
  /** True when deliveries carry an Authorization header (its value is not shown). */
  authorization: boolean;
  created: string;
  updated: string;
}

function webhookRow(w: WebhookRecord): WebhookRow {
  return { id: w.id, url: w.url, include: w.include, level: w.level, authorization: w.authorizationSealed !== null, created: when(w.createdAt), updated: when(w.updatedAt) };
}

/** The app's webhooks as rows, oldest first (the app's overview lists them too). */
export async function webhookRows(ctx: AuthContext, app: AppRecord): Promise<WebhookRow[]> {
  return (await ctx.webhooks.list(app.id)).map(webhookRow);
}

function deliveryRow({ delivery: d, event: e }: { delivery: DeliveryRecord; event: EventRecord | undefined }) {
  const last = d.attempts[d.attempts.length - 1];
  return {
    id: d.id, status: d.status, attempts: d.numAttempts, code: last?.code ?? null, cause: last?.cause ?? null, detail: last?.detail ?? null,
    next: when(d.nextAttemptAt), event: e ? `${e.entity} ${e.action}` : 'event no longer stored', created: when(d.createdAt),
  };
}

/** The form's values to show again: URL, entities and level, never the secret nor the Authorization value. */
function formValues(form: URLSearchParams): { url: string; level: string; include: string[] } {
  return { url: (form.get('url') ?? '').trim(), level: form.get('level') ?? '', include: form.getAll('include') };
}

/** What a form asks of the engine; an empty secret or Authorization field means none. */
function inputOf(form: URLSearchParams, values: ReturnType<typeof formValues>, withSecrets: boolean): WebhookInput {
  const optional = (name: string) => (form.get(name) ? form.get(name) : undefined);
  return { url: values.url, level: values.level, include: values.include, ...(withSecrets ? { secret: optional('secret'), authorization: optional('authorization') } : {}) };
}

/** A FormState keeps strings: the entities travel joined by spaces. */
function stateValues(values: ReturnType<typeof formValues>): Record<string, string> {
  return { url: values.url, level: values.level, include: values.include.join(' ') };
}

function entities(checked: string[]) {
  return APP_WEBHOOK_ENTITIES.map((e) => ({ value: e, words: ENTITY_WORDS[e], checked: checked.includes(e) }));
}

async function renderList(ctx: AuthContext, s: Signed, app: AppRecord, status: number, state: FormState | null): Promise<void> {
  const st = state ?? { form: '', errors: {}, values: { url: '', level: 'notify', include: 'api:release' } };
  sendDashboard(ctx, s, status, 'webhooks', 'apps', {
    title: `Webhooks of ${app.name}`, notice: noticeOf(s.ex), app: { name: app.name },
    webhooks: await webhookRows(ctx, app), canWrite: allowed(s, 'POST /apps/:app/webhooks'),
    entities: entities((st.values.include ?? '').split(' ')), state: st, once: () => ctx.oauth.onceForms.issue(),
  }, appPlace(app.name, 'webhooks'));
}

async function renderOne(ctx: AuthContext, s: Signed, app: AppRecord, w: WebhookRecord, status: number, state: FormState | null): Promise<void> {
  const st = state ?? { form: '', errors: {}, values: { url: w.url, level: w.level, include: w.include.join(' ') } };
  const deliveries = allowed(s, 'GET /apps/:app/webhook-deliveries') ? (await ctx.webhooks.recentDeliveries(app.id, w.id, RECENT_DELIVERIES)).map(deliveryRow) : [];
  sendDashboard(ctx, s, status, 'webhook', 'apps', {
    title: `Webhook of ${app.name}`, notice: noticeOf(s.ex), app: { name: app.name }, webhook: webhookRow(w),
    canWrite: allowed(s, 'PATCH /apps/:app/webhooks/:webhook'), canRemove: allowed(s, 'DELETE /apps/:app/webhooks/:webhook'),
    entities: entities((st.values.include ?? '').split(' ')), state: st, deliveries, shown: RECENT_DELIVERIES,
  }, appPlace(app.name, 'webhooks'));
}

export const showWebhooks = showPage('GET /apps/:app/webhooks', async (ctx, s, params) => {
  await renderList(ctx, s, await visibleApp(ctx, s.principal, params.app!), 200, null);
});

export const submitCreateWebhook = submitForm('POST /apps/:app/webhooks', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const values = formValues(s.form);
  const input = inputOf(s.form, values, true);
  const r = await attempt('add', FIELDS, stateValues(values), async () => {
    if (!await firstSubmission(ctx, s, 'apps')) return null;
    return ctx.webhooks.create(app.id, input);
  });
  if (!r.ok) return await renderList(ctx, s, app, r.status, r.state);
  if (!r.value) return;
  const { webhook, secret } = r.value;
  if (input.secret !== undefined) return done(s, `/apps/${app.name}/webhooks/${webhook.id}`, 'webhook-created');
  showGeneratedSecret(ctx, s, app, webhook, secret);
});

/** The one page that holds a secret the platform generated (as the API's Heroku-Webhook-Secret header). */
function showGeneratedSecret(ctx: AuthContext, s: Submitted, app: AppRecord, w: WebhookRecord, secret: string): void {
  showSecret(ctx, s, 'apps', {
    title: 'Webhook added', label: 'Signing secret',
    message: `Deliveries to ${w.url} are signed with this secret (HMAC-SHA256 of the body, base64, in the Heroku-Webhook-Hmac-SHA256 header). Copy it into the receiver now: it is shown only this once.`,
    secret, back: `/apps/${app.name}/webhooks/${w.id}`, extra: [['Entities', w.include.join(', ')], ['Level', w.level]],
  });
}

export const showWebhook = showPage('GET /apps/:app/webhooks/:webhook', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  await renderOne(ctx, s, app, await ctx.webhooks.get(app.id, params.webhook!), 200, null);
});

export const submitUpdateWebhook = submitForm('PATCH /apps/:app/webhooks/:webhook', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const w = await ctx.webhooks.get(app.id, params.webhook!);
  const values = formValues(s.form);
  const r = await attempt('edit', FIELDS, stateValues(values), () => ctx.webhooks.update(app.id, w.id, inputOf(s.form, values, false)));
  if (!r.ok) return await renderOne(ctx, s, app, w, r.status, r.state);
  done(s, `/apps/${app.name}/webhooks/${w.id}`, 'webhook-saved');
});

export const submitRemoveWebhook = submitForm('DELETE /apps/:app/webhooks/:webhook', async (ctx, s, params) => {
  const app = await visibleApp(ctx, s.principal, params.app!);
  const w = await ctx.webhooks.get(app.id, params.webhook!);
  if (!confirmOr(ctx, s, 'apps', {
    title: 'Remove webhook', button: 'Remove webhook',
    message: `Remove the webhook to ${w.url}? It receives no more events of ${app.name}, and its deliveries not yet made are skipped.`,
  })) return;
  await ctx.webhooks.remove(app.id, w.id);
  done(s, `/apps/${app.name}/webhooks`, 'webhook-removed');
});
