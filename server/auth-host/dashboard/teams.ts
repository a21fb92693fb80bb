/**
 * Teams (docs/platform-conventions.md 3.5; docs/rules.md Endpoints 6, Authentication 8-11), the actions of the /teams API
 * routes by the same engine calls:
 *   GET  /teams                                  the person's teams; create a team
 *   POST /teams                                  create (the creator is its admin)
 *   GET  /teams/:team                            members, team authorizations and authorized
 *                                                applications (admins), third-party switch, apps
 *   POST /teams/:team/members                    add a member or change a role (admins)
 *   POST /teams/:team/members/:member/remove     remove (admins; confirmed; never the last admin)
 *   POST /teams/:team/authorizations             create a team token (admins; shown once)
 *   POST /teams/:team/preferences                third-party OAuth access on or off (admins)
 * Regenerating and revoking team authorizations use the account routes (account.ts), as the API
 * uses /oauth/authorizations/{id} for them.
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import type { TeamRecord } from '../../../engine/platform/teams.js';
import { TEAM_TOKEN_EXPIRY_DAYS } from '../../../engine/platform/teams.js';
import { memberAccount, newMemberAccount, teamApps } from '../../api/teams.js';
import { scopeChoices } from './account.js';
import { lastUsed } from '../../../engine/identity/usage.js';
import {
  allowed, attempt, confirmOr, done, firstSubmission, mirror, noticeOf, sendDashboard, showSecret, signedInPage, submitted, when,
  type FormState, type Signed,
} from './page.js';

const EXPIRY_LABELS: Record<number, string> = { 30: '30 days', 60: '60 days', 90: '90 days', 365: '1 year' };

export async function showTeams(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (s) await renderTeams(ctx, s, 200, null);
}

async function renderTeams(ctx: AuthContext, s: Signed, status: number, state: FormState | null): Promise<void> {
  mirror(s, 'GET /teams');
  sendDashboard(ctx, s, status, 'teams', 'teams', {
    title: 'Teams', notice: noticeOf(s.ex),
    teams: (await ctx.teams.teamsOf(s.account.id)).map(({ team, role }) => ({ name: team.name, role, created: when(team.createdAt) })),
    values: state?.values ?? {}, errors: state?.errors ?? {},
  });
}

export async function submitCreateTeam(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'POST /teams');
  const values = { name: (s.form.get('name') ?? '').trim() };
  const r = await attempt('create', ['name'], values, () => ctx.teams.create(values.name, s.account.id));
  if (!r.ok) return await renderTeams(ctx, s, r.status, r.state);
  done(s, `/teams/${r.value.name}`, 'team-created');
}

async function renderTeam(ctx: AuthContext, s: Signed, team: TeamRecord, status: number, state: FormState | null): Promise<void> {
  mirror(s, 'GET /teams/:team');
  const role = await ctx.teams.roleOf(team.id, s.account.id);
  // A read-only session sees the team as a member does: no admin forms, no team tokens.
  const admin = role === 'admin' && allowed(s, 'POST /teams/:team/authorizations');
  const members = await Promise.all((await ctx.teams.members(team)).map(async (m) => {
    const a = await ctx.accounts.get(m.accountId);
    return { email: a?.email ?? m.accountId, role: m.role, you: m.accountId === s.account.id, since: when(m.createdAt) };
  }));
  const live = admin ? await ctx.teams.authorizations(team) : [];
  const rows = await Promise.all(live.map(async (a) => {
    const [tokens, creator, used] = await Promise.all([ctx.oauth.authorizations.tokensOf(a), ctx.accounts.get(a.accountId), lastUsed(ctx.store.metadata, a.id)]);
    const client = a.clientId ? await ctx.oauth.clients.get(a.clientId) : undefined;
    return {
      id: a.id, description: a.description, scope: a.scope.join(', '), created: when(a.createdAt), expires: when(a.expiresAt) || 'Never',
      creator: creator?.email ?? '', client: client?.name ?? '', lastUsed: when(used) || 'Never', hint: tokens.access?.hint ?? '',
      web: a.kind === 'web',
    };
  }));
  const values = state?.values ?? {};
  sendDashboard(ctx, s, status, 'team', 'teams', {
    title: `Team ${team.name}`, notice: noticeOf(s.ex), team: { name: team.name, thirdParty: team.thirdPartyOAuth }, role, admin, members,
    tokens: rows.filter((r) => !r.web), grants: rows.filter((r) => r.web),
    apps: (await teamApps(ctx, s.principal, team)).map((a) => ({ name: a.name, stack: a.stack })),
    state: state ?? { form: '', errors: {}, values: {} },
    expiries: TEAM_TOKEN_EXPIRY_DAYS.map((d) => ({ value: String(d), label: EXPIRY_LABELS[d] ?? `${d} days`, selected: (values.expiry_days ?? '90') === String(d) })),
    scopes: scopeChoices(values.scope ? values.scope.split(' ') : ['global']),
    once: () => ctx.oauth.onceForms.issue(),
  });
}

export async function showTeam(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (s) await renderTeam(ctx, s, await ctx.teams.visible(params.team!, s.account.id), 200, null);
}

export async function submitMember(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'PUT /teams/:team/members');
  const team = await ctx.teams.visible(params.team!, s.account.id);
  const values = { email: (s.form.get('email') ?? '').trim(), role: s.form.get('role') ?? '' };
  const r = await attempt(s.form.get('form') === 'role' ? 'role' : 'member', ['email', 'role'], values, async () => {
    const administered = await ctx.teams.administered(team.id, s.account.id);
    return ctx.teams.setMember(administered, (await newMemberAccount(ctx, values.email)).id, values.role);
  });
  if (!r.ok) return await renderTeam(ctx, s, team, r.status, r.state);
  done(s, `/teams/${team.name}`, 'member-saved');
}

export async function submitRemoveMember(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'DELETE /teams/:team/members/:member');
  const team = await ctx.teams.visible(params.team!, s.account.id);
  const r = await attempt('remove', [], {}, async () => {
    const administered = await ctx.teams.administered(team.id, s.account.id);
    const account = await memberAccount(ctx, params.member!);
    if (!confirmOr(ctx, s, 'teams', { title: 'Remove member', message: `Remove ${account.email} from team ${team.name}? They lose access to its apps at once.`, button: 'Remove member' })) return false;
    await ctx.teams.removeMember(administered, account.id);
    return true;
  });
  if (!r.ok) return await renderTeam(ctx, s, team, r.status, r.state);
  if (r.value) done(s, `/teams/${team.name}`, 'member-removed');
}

export async function submitTeamAuthorization(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'POST /teams/:team/authorizations');
  const team = await ctx.teams.visible(params.team!, s.account.id);
  const scope = s.form.getAll('scope');
  const values = { description: s.form.get('description') ?? '', expiry_days: s.form.get('expiry_days') ?? '', scope: scope.join(' ') };
  const r = await attempt('token', ['description', 'scope', 'expiry_days'], values, async () => {
    const administered = await ctx.teams.administered(team.id, s.account.id);
    if (!await firstSubmission(ctx, s, 'teams')) return null;
    return ctx.teams.createAuthorization(administered, s.account.id, { description: values.description, scope, expiry_days: values.expiry_days || undefined });
  });
  if (!r.ok) return await renderTeam(ctx, s, team, r.status, r.state);
  if (!r.value) return;
  const issued = r.value;
  showSecret(ctx, s, 'teams', {
    title: 'Team token created', label: 'Team access token',
    message: `A token for team ${team.name}. It reaches only this team's apps and resources. Copy it now: it is shown only this once.`,
    secret: issued.accessToken.token, back: `/teams/${team.name}`,
    extra: [['Scopes', issued.record.scope.join(', ')], ['Expires', when(issued.record.expiresAt)]],
  });
}

export async function submitPreferences(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await submitted(ctx, ex, params);
  mirror(s, 'PATCH /teams/:team/preferences');
  const team = await ctx.teams.administered(params.team!, s.account.id);
  const on = s.form.get('third_party') === 'on';
  if (!on && !confirmOr(ctx, s, 'teams', {
    title: 'Turn off third-party access',
    message: `Turn off third-party OAuth access for team ${team.name}? Applications made by others that people authorized will be refused on this team's apps, releases and images until it is turned on again. Direct authorizations, team tokens and first-party applications keep working.`,
    button: 'Turn off',
  })) return;
  await ctx.teams.setThirdPartyOAuth(team, on);
  done(s, `/teams/${team.name}`, on ? 'third-party-on' : 'third-party-off');
}
