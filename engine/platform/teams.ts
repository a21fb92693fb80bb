/**
 * Teams (docs/rules.md What the service does 3-4, Authentication 8-11; docs/platform-conventions.md 3.5): members with
 * the roles admin and member, team-owned apps, team authorizations (created and managed only by
 * team admins, expiring after 30, 60, 90 or 365 days), and the team setting "third-party OAuth
 * access" (on by default).
 */
import type { Store } from '../store.js';
import { key, type MetadataStore, type MetadataTransaction } from '../storage/metadata.js';
import { apps, memberships, membershipsByAccount, teams, teamsByName } from './keyspaces.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { newId } from '../identity/tokens.js';
import { createAuthorizationInTransaction, type IssuedTokens } from '../identity/authorizations.js';
import { authorizationsOfTeam, getAuthorization } from '../identity/authorization-queries.js';
import type { AuthorizationRecord } from '../identity/records.js';
import type { TeamChoice, TeamDirectory } from '../oauth/owners.js';
import { parseDescription, parseScopeArray } from '../oauth/authorizations.js';
import { APP_NAME } from '../registry/names.js';
import type { AppRecord } from './records.js';
import { checkIdentifier } from '../identifiers.js';

export type TeamRole = 'admin' | 'member';

export interface TeamRecord {
  id: string;
  name: string;
  /** Team setting: tokens of third-party (untrusted) OAuth clients may reach team resources. */
  thirdPartyOAuth: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface MembershipRecord {
  teamId: string;
  accountId: string;
  role: TeamRole;
  createdAt: number;
}

/** Expiry choices of team authorizations, days (docs/rules.md Endpoints 6; default 1 year). */
export const TEAM_TOKEN_EXPIRY_DAYS: readonly number[] = [30, 60, 90, 365];

const DAY_MS = 24 * 3600_000;

/**
 * Teams, memberships and team authorizations. Platform records go through the metadata contract
 * (`store.metadata`); team authorizations are identity records, created and read through the
 * identity domain's functions, which still take the store.
 */
export class Teams implements TeamDirectory {
  readonly metadata: MetadataStore;

  constructor(readonly store: Store, readonly clock: Clock) {
    this.metadata = store.metadata;
  }

  /**
   * Creates a team with `creatorId` as its first admin.
   * @throws INVALID_PARAMS for a bad name; CONFLICT when taken.
   */
  async create(name: unknown, creatorId: string): Promise<TeamRecord> {
    if (typeof name !== 'string' || !APP_NAME.test(name)) throw fail('INVALID_PARAMS', 'name must be 3-30 lowercase letters, digits and dashes, starting with a letter');
    const now = this.clock.now();
    const team: TeamRecord = { id: newId(), name, thirdPartyOAuth: true, createdAt: now, updatedAt: now };
    await this.metadata.transact(async (tx) => {
      if (await tx.get(teamsByName, name) !== undefined) throw fail('CONFLICT', `Team name ${name} is already taken.`);
      tx.put(teams, team.id, team);
      tx.put(teamsByName, name, team.id);
      putMembership(tx, { teamId: team.id, accountId: creatorId, role: 'admin', createdAt: now });
    });
    return team;
  }

  /** By id or name. @throws INVALID_PARAMS for a malformed identifier. */
  async find(idOrName: string): Promise<TeamRecord | undefined> {
    return this.metadata.get(teams, await this.metadata.get(teamsByName, checkIdentifier('team', idOrName)) ?? idOrName);
  }

  /** The caller's role in a team, or undefined. */
  async roleOf(teamId: string, accountId: string): Promise<TeamRole | undefined> {
    return (await this.metadata.get(memberships, key(teamId, accountId)))?.role;
  }

  /**
   * A team the account belongs to.
   * @throws NOT_FOUND otherwise (a non-member cannot tell a team exists).
   */
  async visible(idOrName: string, accountId: string): Promise<TeamRecord> {
    const team = await this.find(idOrName);
    if (!team || !await this.roleOf(team.id, accountId)) throw fail('NOT_FOUND', "Couldn't find that team.", { resource: 'team' });
    return team;
  }

  /**
   * A team the account administers.
   * @throws NOT_FOUND when not a member, DENIED when a member but not an admin.
   */
  async administered(idOrName: string, accountId: string): Promise<TeamRecord> {
    const team = await this.visible(idOrName, accountId);
    if (await this.roleOf(team.id, accountId) !== 'admin') throw fail('DENIED', `Only admins of team ${team.name} can do this.`);
    return team;
  }

  /** Teams of an account with its role in each. */
  async teamsOf(accountId: string): Promise<Array<{ team: TeamRecord; role: TeamRole }>> {
    const out: Array<{ team: TeamRecord; role: TeamRole }> = [];
    for (const { key: k, value } of await this.metadata.range(membershipsByAccount, { prefix: accountId })) {
      const role = value as TeamRole;
      const team = await this.metadata.get(teams, k.slice(accountId.length + 1));
      if (team) out.push({ team, role });
    }
    return out;
  }

  /** TeamDirectory for the consent page's team picker (docs/rules.md Endpoints 1, Authentication 9). */
  async adminTeamsOf(accountId: string): Promise<TeamChoice[]> {
    return (await this.teamsOf(accountId)).filter((t) => t.role === 'admin').map(({ team }) => ({ id: team.id, name: team.name }));
  }

  /** Memberships of a team in account-id order. */
  async members(team: TeamRecord): Promise<MembershipRecord[]> {
    return membersOf(this.metadata, team.id);
  }

  /**
   * Adds a member or changes a role.
   * @throws INVALID_PARAMS for a bad role; CONFLICT when it would leave the team without an admin.
   */
  async setMember(team: TeamRecord, accountId: string, role: unknown): Promise<MembershipRecord> {
    if (role !== 'admin' && role !== 'member') throw fail('INVALID_PARAMS', 'role must be "admin" or "member"');
    const now = this.clock.now();
    return this.metadata.transact(async (tx) => {
      const current = await tx.get(memberships, key(team.id, accountId));
      if (current?.role === 'admin' && role === 'member') await requireAnotherAdmin(tx, team, accountId);
      const m: MembershipRecord = { teamId: team.id, accountId, role, createdAt: current?.createdAt ?? now };
      putMembership(tx, m);
      return m;
    });
  }

  /** Removes a member. @throws NOT_FOUND, CONFLICT for the last admin. */
  async removeMember(team: TeamRecord, accountId: string): Promise<MembershipRecord> {
    return this.metadata.transact(async (tx) => {
      const current = await tx.get(memberships, key(team.id, accountId));
      if (!current) throw fail('NOT_FOUND', "Couldn't find that team member.", { resource: 'team-member' });
      if (current.role === 'admin') await requireAnotherAdmin(tx, team, accountId);
      tx.remove(memberships, key(team.id, accountId));
      tx.remove(membershipsByAccount, key(accountId, team.id));
      return current;
    });
  }

  /** Sets team preferences. */
  async setThirdPartyOAuth(team: TeamRecord, enabled: boolean): Promise<TeamRecord> {
    const now = this.clock.now();
    return this.metadata.transact(async (tx) => {
      const current = await tx.get(teams, team.id);
      if (!current) throw fail('NOT_FOUND', "Couldn't find that team.", { resource: 'team' });
      const updated = { ...current, thirdPartyOAuth: enabled, updatedAt: now };
      tx.put(teams, team.id, updated);
      return updated;
    });
  }

  /**
   * A team authorization: global scope unless narrowed, expiring after `expiry_days`
   * (30, 60, 90 or 365; default 365). The token is returned only here.
   * @throws INVALID_PARAMS for another expiry, a bad description or scope.
   */
  async createAuthorization(team: TeamRecord, adminId: string, input: { description?: unknown; scope?: unknown; expiry_days?: unknown }): Promise<IssuedTokens> {
    const days = input.expiry_days === undefined || input.expiry_days === null ? 365 : Number(input.expiry_days);
    if (!TEAM_TOKEN_EXPIRY_DAYS.includes(days)) throw fail('INVALID_PARAMS', `expiry_days must be one of ${TEAM_TOKEN_EXPIRY_DAYS.join(', ')}`);
    const description = parseDescription(input.description);
    const scope = parseScopeArray(input.scope);
    const now = this.clock.now();
    return this.store.metadata.transact((tx) => createAuthorizationInTransaction(tx, {
      kind: 'direct', accountId: adminId, teamId: team.id, description, scope,
      expiresAt: now + days * DAY_MS, accessTokenTtlMs: days * DAY_MS, withRefreshToken: false,
    }, now));
  }

  /**
   * Live (not revoked, not expired at the clock's now) authorizations of a team, in id order
   * (listed only when the team is named, docs/rules.md Endpoints 6). Reads the team's entries of the
   * `authorizations-by-team` index (written with each record, engine/identity/authorizations.ts), not every
   * authorization.
   */
  async authorizations(team: TeamRecord): Promise<AuthorizationRecord[]> {
    const now = this.clock.now();
    const all = await authorizationsOfTeam(this.store.metadata, team.id);
    return all.filter((a) => a.teamId === team.id && a.revokedAt === null && (a.expiresAt === null || a.expiresAt > now));
  }

  /**
   * A team authorization any admin of its team may manage (regenerate, revoke).
   * @returns undefined when `id` is not a team authorization of a team `accountId` administers.
   */
  async manageableAuthorization(id: string, accountId: string): Promise<AuthorizationRecord | undefined> {
    const a = await getAuthorization(this.store.metadata, checkIdentifier('authorization', id));
    if (!a || a.teamId === null || a.revokedAt !== null) return undefined;
    return await this.roleOf(a.teamId, accountId) === 'admin' ? a : undefined;
  }

  /**
   * Moves an app into a team (its owner, who must administer the team).
   * @throws DENIED otherwise.
   */
  async moveApp(app: AppRecord, team: TeamRecord, accountId: string): Promise<AppRecord> {
    const now = this.clock.now();
    return this.metadata.transact(async (tx) => {
      if ((await tx.get(memberships, key(team.id, accountId)))?.role !== 'admin') throw fail('DENIED', `Only admins of team ${team.name} can move apps into it.`);
      const current = await tx.get(apps, app.id);
      if (!current) throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
      const updated = { ...current, teamId: team.id, updatedAt: now };
      tx.put(apps, app.id, updated);
      return updated;
    });
  }
}

/** Memberships of team `teamId` in account-id order (one range read). */
async function membersOf(reader: MetadataStore | MetadataTransaction, teamId: string): Promise<MembershipRecord[]> {
  return (await reader.range(memberships, { prefix: teamId })).map((e) => e.value);
}

/** @throws CONFLICT when no admin other than `leaving` would remain. */
async function requireAnotherAdmin(tx: MetadataTransaction, team: TeamRecord, leaving: string): Promise<void> {
  if (!(await membersOf(tx, team.id)).some((m) => m.role === 'admin' && m.accountId !== leaving)) {
    throw fail('CONFLICT', `Team ${team.name} needs at least one admin.`);
  }
}

/** Writes a membership and its by-account index entry. */
function putMembership(tx: MetadataTransaction, m: MembershipRecord): void {
  tx.put(memberships, key(m.teamId, m.accountId), m);
  tx.put(membershipsByAccount, key(m.accountId, m.teamId), m.role);
}
