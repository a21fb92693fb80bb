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
import type { AuthContext } from '../context.js';
import type { ClientRecord } from '../../../engine/oauth/records.js';
import { clientFields, ownedClient } from '../../api/clients.js';
import {
  confirmOr, done, firstSubmission, noticeOf, sendDashboard, showSecret, when, type FormState, type Signed,
} from './page.js';
import { actOrRerender, showPage, submitForm } from './handler.js';

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

/** GET /account/clients. */
export const showClients = showPage(null, (ctx, s) => renderList(ctx, s, 200, null));

/** POST /account/clients: register a client, its secret shown once. */
export const submitCreateClient = submitForm('POST /oauth/clients', async (ctx, s) => {
  const values = formValues(s.form);
  const r = await actOrRerender({ form: 'create', fields: FIELDS, values }, async () => {
    const fields = await clientFields(ctx, s.account.id, values);
    if (!await firstSubmission(ctx, s, 'clients')) return null;
    return ctx.oauth.clients.create(s.account.id, fields);
  }, (status, state) => renderList(ctx, s, status, state));
  if (!r?.value) return;
  const { client, secret } = r.value;
  showSecret(ctx, s, 'clients', {
    title: 'Client created', label: 'Client secret',
    message: `The OAuth client "${client.name}" was registered. Copy its secret now: it is shown only this once.`,
    secret, back: `/account/clients/${client.id}`, extra: [['Client id', client.id], ['Redirect URI', client.redirectUri]],
  });
});

/** GET /account/clients/:id: the edit form. */
export const showClient = showPage('PATCH /oauth/clients/:id', async (ctx, s, params) => {
  renderEdit(ctx, s, await ownedClient(ctx, s.account.id, params.id!), 200, null);
});

/** POST /account/clients/:id: save name and redirect URI. */
export const submitUpdateClient = submitForm('PATCH /oauth/clients/:id', async (ctx, s, params) => {
  const c = await ownedClient(ctx, s.account.id, params.id!);
  const values = formValues(s.form);
  const r = await actOrRerender({ form: 'edit', fields: FIELDS, values }, async () => ctx.oauth.clients.update(c, await clientFields(ctx, s.account.id, values)), (status, state) => renderEdit(ctx, s, c, status, state));
  if (r) done(s, `/account/clients/${c.id}`, 'saved');
});

/** POST /account/clients/:id/rotate (confirmed): a new secret, shown once. */
export const submitRotateClient = submitForm('POST /oauth/clients/:id/actions/rotate-credentials', async (ctx, s, params) => {
  const c = await ownedClient(ctx, s.account.id, params.id!);
  if (!confirmOr(ctx, s, 'clients', { title: 'Rotate secret', message: `Give "${c.name}" a new secret? The current secret stops working at once; the application must be updated.`, button: 'Rotate secret' })) return;
  if (!await firstSubmission(ctx, s, 'clients')) return;
  const { client, secret } = await ctx.oauth.clients.rotate(c);
  showSecret(ctx, s, 'clients', {
    title: 'Secret rotated', label: 'Client secret',
    message: `The new secret of "${client.name}". Copy it now: it is shown only this once. The old secret no longer works.`,
    secret, back: `/account/clients/${client.id}`, extra: [['Client id', client.id]],
  });
});

/** POST /account/clients/:id/delete (confirmed; revokes its authorizations). */
export const submitDeleteClient = submitForm('DELETE /oauth/clients/:id', async (ctx, s, params) => {
  const c = await ownedClient(ctx, s.account.id, params.id!);
  if (!confirmOr(ctx, s, 'clients', { title: 'Delete client', message: `Delete "${c.name}"? Every authorization issued to it is revoked, and people must authorize a new client. This cannot be undone.`, button: 'Delete client' })) return;
  await ctx.oauth.clients.remove(c);
  done(s, '/account/clients', 'deleted');
});
