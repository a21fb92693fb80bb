/**
 * Teams (docs/platform-conventions.md 3.5; docs/rules.md Endpoints 6, Authentication 8-11): create/list/info, members with
 * roles admin and member, preferences (third-party OAuth access), team apps, and team
 * authorizations (admins only; the token value is shown once, at creation).
 * Routes: see server/api/routes.ts; all are user-only (team tokens cannot manage teams).
 */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { readJson, reply } from './respond.js';
import { fail } from '../../engine/errors.js';
import { isoTime } from '../../engine/clock.js';
import type { TeamRecord } from '../../engine/platform/teams.js';
import { appResponse } from './apps.js';
import { appRole } from '../../engine/platform/access.js';
import { authorizationResponse } from './authorizations.js';
import type { Account } from '../../engine/identity/records.js';
import type { Principal } from '../../engine/identity/authorizations.js';
import type { AppRecord } from '../../engine/platform/records.js';

/** The account `email` names, for adding a member or changing a role. @throws INVALID_PARAMS when none. */
export async function newMemberAccount(ctx: ApiContext, email: unknown): Promise<Account> {
  const account = typeof email === 'string' ? await ctx.accounts.byEmail(email) : undefined;
  if (!account) throw fail('INVALID_PARAMS', 'email must name an existing account');
  return account;
}

/** The account a member path segment names (e-mail or account id). @throws NOT_FOUND when none. */
export async function memberAccount(ctx: ApiContext, who: string): Promise<Account> {
  const account = (await ctx.accounts.byEmail(who)) ?? (await ctx.accounts.get(who));
  if (!account) throw fail('NOT_FOUND', "Couldn't find that team member.", { resource: 'team-member' });
  return account;
}

/** The apps of `team` that `p` may see. */
export async function teamApps(ctx: ApiContext, p: Principal, team: TeamRecord): Promise<AppRecord[]> {
  const out: AppRecord[] = [];
  for (const a of await ctx.apps.all()) if (a.teamId === team.id && await appRole(ctx.store.metadata, p, a) !== 'none') out.push(a);
  return out;
}

function teamJson(t: TeamRecord, role: string | undefined) {
  return { id: t.id, name: t.name, type: 'team', role: role ?? null, default: false, created_at: isoTime(t.createdAt), updated_at: isoTime(t.updatedAt) };
}

function preferencesJson(t: TeamRecord) {
  return { 'third-party-oauth-access': t.thirdPartyOAuth, 'default-permission': 'member', 'addons-controls': false };
}

export async function createTeam(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const team = await ctx.teams.create((await readJson(call.ex)).name, p.accountId);
  reply(ctx, call, 201, teamJson(team, 'admin'));
}

export async function listTeams(ctx: ApiContext, call: ApiCall): Promise<void> {
  reply(ctx, call, 200, (await ctx.teams.teamsOf(principalOf(call).accountId)).map(({ team, role }) => teamJson(team, role)));
}

export async function getTeam(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const team = await ctx.teams.visible(call.params.team!, p.accountId);
  reply(ctx, call, 200, teamJson(team, await ctx.teams.roleOf(team.id, p.accountId)));
}

/** GET /teams/{team}/features: empty (no team-level features, e.g. no invitation acceptance: members are added directly). */
export async function listTeamFeatures(ctx: ApiContext, call: ApiCall): Promise<void> {
  await ctx.teams.visible(call.params.team!, principalOf(call).accountId);
  reply(ctx, call, 200, []);
}

export async function getPreferences(ctx: ApiContext, call: ApiCall): Promise<void> {
  reply(ctx, call, 200, preferencesJson(await ctx.teams.visible(call.params.team!, principalOf(call).accountId)));
}

export async function updatePreferences(ctx: ApiContext, call: ApiCall): Promise<void> {
  const team = await ctx.teams.administered(call.params.team!, principalOf(call).accountId);
  const body = await readJson(call.ex);
  const v = body['third-party-oauth-access'];
  if (typeof v !== 'boolean') throw fail('INVALID_PARAMS', 'third-party-oauth-access must be true or false');
  reply(ctx, call, 200, preferencesJson(await ctx.teams.setThirdPartyOAuth(team, v)));
}

export async function listMembers(ctx: ApiContext, call: ApiCall): Promise<void> {
  const team = await ctx.teams.visible(call.params.team!, principalOf(call).accountId);
  reply(ctx, call, 200, await Promise.all((await ctx.teams.members(team)).map(async (m) => {
    const a = await ctx.accounts.get(m.accountId);
    return { id: m.accountId, email: a?.email ?? null, role: m.role, user: { id: m.accountId, email: a?.email ?? null, name: a?.name ?? null }, created_at: isoTime(m.createdAt), updated_at: isoTime(m.createdAt) };
  })));
}

/** PUT /teams/{team}/members {email, role}: add a member or change a role (admins only). */
export async function putMember(ctx: ApiContext, call: ApiCall): Promise<void> {
  const team = await ctx.teams.administered(call.params.team!, principalOf(call).accountId);
  const body = await readJson(call.ex);
  const account = await newMemberAccount(ctx, body.email);
  const m = await ctx.teams.setMember(team, account.id, body.role);
  reply(ctx, call, 200, { id: account.id, email: account.email, role: m.role, created_at: isoTime(m.createdAt), updated_at: isoTime(m.createdAt) });
}

export async function removeMember(ctx: ApiContext, call: ApiCall): Promise<void> {
  const team = await ctx.teams.administered(call.params.team!, principalOf(call).accountId);
  const account = await memberAccount(ctx, call.params.member!);
  const m = await ctx.teams.removeMember(team, account.id);
  reply(ctx, call, 200, { id: account.id, email: account.email, role: m.role });
}

export async function listTeamApps(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const team = await ctx.teams.visible(call.params.team!, p.accountId);
  reply(ctx, call, 200, await Promise.all((await teamApps(ctx, p, team)).map((a) => appResponse(ctx, a))));
}

/** POST /teams/{team}/authorizations {description, scope?, expiry_days: 30|60|90|365}: admins only. */
export async function createTeamAuthorization(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const team = await ctx.teams.administered(call.params.team!, p.accountId);
  const issued = await ctx.teams.createAuthorization(team, p.accountId, await readJson(call.ex));
  reply(ctx, call, 201, await authorizationResponse(ctx, issued.record, issued));
}

/** GET /teams/{team}/authorizations: the team's live tokens (values never shown again). */
export async function listTeamAuthorizations(ctx: ApiContext, call: ApiCall): Promise<void> {
  const team = await ctx.teams.administered(call.params.team!, principalOf(call).accountId);
  reply(ctx, call, 200, await Promise.all((await ctx.teams.authorizations(team)).map((a) => authorizationResponse(ctx, a))));
}
