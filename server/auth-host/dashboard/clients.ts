/**
 * Account → OAuth clients (docs/rules.md Resources 1; docs/platform-conventions.md 2.4), the actions of
 * POST/PATCH/DELETE /oauth/clients and …/actions/rotate-credentials by the same engine calls:
 *   GET  /account/clients               the person's clients and the create form
 *   POST /account/clients               create (the secret is shown once)
 *   GET  /account/clients/:id           edit form, rotate, delete
 *   POST /account/clients/:id           save name and redirect URI
 *   POST /account/clients/:id/rotate    new secret (confirmed; shown once)
 *   POST /account/clients/:id/delete    delete (confirmed; revokes its authorizations)
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import type { ClientRecord } from '../../../engine/oauth/records.js';
import { clientFields, ownedClient } from '../../api/clients.js';
import {
  attempt, confirmOr, done, firstSubmission, mirror, noticeOf, sendDashboard, showSecret, signedInPage, submitted, when,
  type FormState, type Signed,
} from './page.js';

const FIELDS = ['name', 'redirect_uri'] as const;

function clientRow(c: ClientRecord) {
  return { id: c.id, name: c.name, redirectUri: c.redirectUri, trusted: c.trusted, created: when(c.createdAt) };
}

async function renderList(ctx: AuthContext, s: Signed, status: number, state: FormState | null): Promise<void> {
  sendDashboard(ctx, s, status, 'clients', 'clients', {
    title: 'OAuth clients', notice: noticeOf(s.ex),
    clients: (await ctx.oauth.clients.ownedBy(s.account.id)).map(clientRow),
    values: state?.values ?? {}, errors: state?.errors ?? {}, once: () => ctx.oauth.onceForms.issue(),
  });
}

function renderEdit(ctx: AuthContext, s: Signed, c: ClientRecord, status: number, state: FormState | null): void {
  sendDashboard(ctx, s, status, 'client', 'clients', {
    title: `OAuth client ${c.name}`, notice: noticeOf(s.ex), client: clientRow(c),
    values: state?.values ?? { name: c.name, redirect_uri: c.redirectUri }, errors: state?.errors ?? {}, once: () => ctx.oauth.onceForms.issue(),
  });
}

function formValues(form: URLSearchParams): Record<string, string> {
  return { name: (form.get('name') ?? '').trim(), redirect_uri: (form.get('redirect_uri') ?? '').trim() };
}

export async function showClients(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (s) await renderList(ctx, s, 200, null);
}

export async function submitCreateClient(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'POST /oauth/clients');
  const values = formValues(s.form);
  const r = await attempt('create', FIELDS, values, async () => {
    const fields = await clientFields(ctx, s.account.id, values);
    if (!await firstSubmission(ctx, s, 'clients')) return null;
    return ctx.oauth.clients.create(s.account.id, fields);
  });
  if (!r.ok) return renderList(ctx, s, r.status, r.state);
  if (!r.value) return;
  const { client, secret } = r.value;
  showSecret(ctx, s, 'clients', {
    title: 'Client created', label: 'Client secret',
    message: `The OAuth client "${client.name}" was registered. Copy its secret now: it is shown only this once.`,
    secret, back: `/account/clients/${client.id}`, extra: [['Client id', client.id], ['Redirect URI', client.redirectUri]],
  });
}

export async function showClient(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (!s) return;
  mirror(s, 'PATCH /oauth/clients/:id');
  renderEdit(ctx, s, await ownedClient(ctx, s.account.id, params.id!), 200, null);
}

export async function submitUpdateClient(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'PATCH /oauth/clients/:id');
  const c = await ownedClient(ctx, s.account.id, params.id!);
  const values = formValues(s.form);
  const r = await attempt('edit', FIELDS, values, async () => ctx.oauth.clients.update(c, await clientFields(ctx, s.account.id, values)));
  if (!r.ok) return renderEdit(ctx, s, c, r.status, r.state);
  done(s, `/account/clients/${c.id}`, 'saved');
}

export async function submitRotateClient(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'POST /oauth/clients/:id/actions/rotate-credentials');
  const c = await ownedClient(ctx, s.account.id, params.id!);
  if (!confirmOr(ctx, s, 'clients', { title: 'Rotate secret', message: `Give "${c.name}" a new secret? The current secret stops working at once; the application must be updated.`, button: 'Rotate secret' })) return;
  if (!await firstSubmission(ctx, s, 'clients')) return;
  const { client, secret } = await ctx.oauth.clients.rotate(c);
  showSecret(ctx, s, 'clients', {
    title: 'Secret rotated', label: 'Client secret',
    message: `The new secret of "${client.name}". Copy it now: it is shown only this once. The old secret no longer works.`,
    secret, back: `/account/clients/${client.id}`, extra: [['Client id', client.id]],
  });
}

export async function submitDeleteClient(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'DELETE /oauth/clients/:id');
  const c = await ownedClient(ctx, s.account.id, params.id!);
  if (!confirmOr(ctx, s, 'clients', { title: 'Delete client', message: `Delete "${c.name}"? Every authorization issued to it is revoked, and people must authorize a new client. This cannot be undone.`, button: 'Delete client' })) return;
  await ctx.oauth.clients.remove(c);
  done(s, '/account/clients', 'deleted');
}
