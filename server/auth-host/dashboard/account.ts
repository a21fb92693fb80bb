/**
 * Account → Applications: what has access to the account (docs/rules.md Resources "Authorization";
 * docs/platform-conventions.md 2.3), with the actions of POST/DELETE /oauth/authorizations and
 * …/actions/regenerate-tokens performed by the same engine calls:
 *   GET  /account/applications                        web-flow grants, direct authorizations, API key
 *   POST /account/authorizations                      create a direct authorization (token shown once)
 *   POST /account/authorizations/:id/regenerate       new token values (shown once); also the API key
 *                                                     and team authorizations of teams one administers
 *   POST /account/authorizations/:id/revoke           revoke (confirmed)
 */
import type { AuthContext } from '../context.js';
import type { AuthorizationRecord } from '../../../engine/identity/records.js';
import { SCOPES, SCOPE_DESCRIPTIONS } from '../../../engine/identity/scope.js';
import { manageableAuthorization } from '../../api/authorizations.js';
import { lastUsed } from '../../../engine/identity/usage.js';
import {
  backTo, confirmOr, done, firstSubmission, noticeOf, sendDashboard, showSecret, when, type FormState, type Section, type Signed,
} from './page.js';
import { actOrRerender, showPage, submitForm } from './handler.js';

/** Expiry choices of a direct authorization: label → `expires_in` seconds ('' = never). */
export const DIRECT_EXPIRY_CHOICES: ReadonlyArray<[string, string]> = [
  ['No expiry', ''], ['1 day', '86400'], ['30 days', '2592000'], ['90 days', '7776000'], ['1 year', '31536000'],
];

/** The scope checkboxes of a token form. */
export function scopeChoices(checked: readonly string[]) {
  return SCOPES.map((s) => ({ name: s, description: SCOPE_DESCRIPTIONS[s], checked: checked.includes(s) }));
}

/** The navigation section of the page an action came from (team tokens are managed on team pages). */
function sectionOf(form: URLSearchParams): Section {
  return backTo(form).startsWith('/teams') ? 'teams' : 'applications';
}

async function rowOf(ctx: AuthContext, a: AuthorizationRecord) {
  const [tokens, used] = await Promise.all([ctx.oauth.authorizations.tokensOf(a), lastUsed(ctx.store.metadata, a.id)]);
  const client = a.clientId ? await ctx.oauth.clients.get(a.clientId) : undefined;
  return {
    id: a.id, description: a.description, scope: a.scope.join(', '), created: when(a.createdAt),
    expires: when(a.expiresAt ?? tokens.access?.expiresAt ?? null) || 'Never',
    lastUsed: when(used) || 'Never', hint: tokens.access?.hint ?? '', client: client?.name ?? 'Deleted client',
  };
}

async function render(ctx: AuthContext, s: Signed, status: number, state: FormState | null): Promise<void> {
  const all = await ctx.oauth.authorizations.listFor(s.account.id);
  const apiKey = all.find((a) => a.id === s.account.apiKeyAuthorizationId);
  const values = state?.values ?? {};
  sendDashboard(ctx, s, status, 'applications', 'applications', {
    title: 'Applications',
    notice: noticeOf(s.ex),
    grants: await Promise.all(all.filter((a) => a.kind === 'web').map((a) => rowOf(ctx, a))),
    direct: await Promise.all(all.filter((a) => a.kind === 'direct').map((a) => rowOf(ctx, a))),
    apiKey: apiKey ? await rowOf(ctx, apiKey) : null,
    scopes: scopeChoices(values.scope ? values.scope.split(' ') : ['global']),
    expiries: DIRECT_EXPIRY_CHOICES.map(([label, value]) => ({ label, value, selected: (values.expires_in ?? '') === value })),
    description: values.description ?? '',
    errors: state?.errors ?? {},
    once: () => ctx.oauth.onceForms.issue(),
  });
}

/** GET /account/applications. */
export const showApplications = showPage(null, (ctx, s) => render(ctx, s, 200, null));

/** POST /account/authorizations: a direct authorization, its token shown once. */
export const submitCreateAuthorization = submitForm('POST /oauth/authorizations', async (ctx, s) => {
  const scope = s.form.getAll('scope');
  const values = { description: s.form.get('description') ?? '', expires_in: s.form.get('expires_in') ?? '', scope: scope.join(' ') };
  // A form with no scope ticked is an error, not the API's default (a person chose nothing).
  const r = await actOrRerender({ form: 'create', fields: ['description', 'scope', 'expires_in'], values }, async () => {
    if (!await firstSubmission(ctx, s, 'applications')) return null;
    return ctx.oauth.authorizations.createDirect(s.account.id, { description: values.description, scope: scope.length ? scope : [], expires_in: values.expires_in || null });
  }, (status, state) => render(ctx, s, status, state));
  if (!r?.value) return;
  const issued = r.value;
  showSecret(ctx, s, 'applications', {
    title: 'Authorization created', label: 'Access token',
    message: `The authorization "${issued.record.description || 'without description'}" was created. Copy its token now: it is shown only this once.`,
    secret: issued.accessToken.token, back: '/account/applications',
    extra: [['Scopes', issued.record.scope.join(', ')], ['Expires', when(issued.accessToken.expiresAt) || 'Never']],
  });
});

/** POST /account/authorizations/:id/regenerate (confirmed): new token values, shown once. */
export const submitRegenerate = submitForm('POST /oauth/authorizations/:id/actions/regenerate-tokens', async (ctx, s, params) => {
  const a = await manageableAuthorization(ctx, s.account.id, params.id!);
  const section = sectionOf(s.form);
  const name = a.kind === 'api-key' ? 'your API key' : `"${a.description || a.id}"`;
  if (!confirmOr(ctx, s, section, { title: 'Regenerate token', message: `Regenerate the token of ${name}? The current token stops working at once; scripts using it must get the new one.`, button: 'Regenerate' })) return;
  if (!await firstSubmission(ctx, s, section)) return;
  const issued = await ctx.oauth.authorizations.regenerate(a);
  showSecret(ctx, s, section, {
    title: 'Token regenerated', label: a.kind === 'api-key' ? 'API key' : 'Access token',
    message: `A new token for ${name}. Copy it now: it is shown only this once. The old token no longer works.`,
    secret: issued.accessToken.token, back: backTo(s.form),
    extra: [['Expires', when(issued.accessToken.expiresAt) || 'Never']],
  });
});

/** POST /account/authorizations/:id/revoke (confirmed). */
export const submitRevoke = submitForm('DELETE /oauth/authorizations/:id', async (ctx, s, params) => {
  const a = await manageableAuthorization(ctx, s.account.id, params.id!);
  const client = a.clientId ? await ctx.oauth.clients.get(a.clientId) : undefined;
  const name = client ? `the access of ${client.name}` : `"${a.description || a.id}"`;
  if (!confirmOr(ctx, s, sectionOf(s.form), { title: 'Revoke', message: `Revoke ${name}? Every token of it stops working at once. This cannot be undone.`, button: 'Revoke' })) return;
  await ctx.oauth.authorizations.revoke(a);
  done(s, backTo(s.form), 'revoked');
});
