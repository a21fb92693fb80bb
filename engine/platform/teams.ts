/**
 * Teams (docs/rules.md What the service does 3-4, Authentication 8-11; docs/platform-conventions.md 3.5): members with
 * the roles admin and member, team-owned apps, team authorizations (created and managed only by
 * team admins, expiring after 30, 60, 90 or 365 days), and the team setting "third-party OAuth
 * access" (on by default).
 */
import { key, prefixRange, type Store } from '../store.js';
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

export class Teams implements TeamDirectory {
  constructor(readonly store: Store, readonly clock: Clock) {}

  /**
   * Creates a team with `creatorId` as its first admin.
   * @throws INVALID_PARAMS for a bad name; CONFLICT when taken.
   */
  async create(name: unknown, creatorId: string): Promise<TeamRecord> {
    if (typeof name !== 'string' || !APP_NAME.test(name)) throw fail('INVALID_PARAMS', 'name must be 3-30 lowercase letters, digits and dashes, starting with a letter');
    const now = this.clock.now();
    const team: TeamRecord = { id: newId(), name, thirdPartyOAuth: true, createdAt: now, updatedAt: now };
    await this.store.env.transaction(() => {
      if (this.store.teamsByName.get(name) !== undefined) throw fail('CONFLICT', `Team name ${name} is already taken.`);
      this.store.teams.put(team.id, team);
      this.store.teamsByName.put(name, team.id);
      this.#putMembership({ teamId: team.id, accountId: creatorId, role: 'admin', createdAt: now });
    });
    return team;
  }

  /** By id or name. */
  find(idOrName: string): TeamRecord | undefined {
    return this.store.teams.get(this.store.teamsByName.get(checkIdentifier('team', idOrName)) ?? idOrName);
  }

  /** The caller's role in a team, or undefined. */
  roleOf(teamId: string, accountId: string): TeamRole | undefined {
    return this.store.memberships.get(key(teamId, accountId))?.role;
  }

  /**
   * A team the account belongs to.
   * @throws NOT_FOUND otherwise (a non-member cannot tell a team exists).
   */
  visible(idOrName: string, accountId: string): TeamRecord {
    const team = this.find(idOrName);
    if (!team || !this.roleOf(team.id, accountId)) throw fail('NOT_FOUND', "Couldn't find that team.", { resource: 'team' });
    return team;
  }

  /**
   * A team the account administers.
   * @throws NOT_FOUND when not a member, DENIED when a member but not an admin.
   */
  administered(idOrName: string, accountId: string): TeamRecord {
    const team = this.visible(idOrName, accountId);
    if (this.roleOf(team.id, accountId) !== 'admin') throw fail('DENIED', `Only admins of team ${team.name} can do this.`);
    return team;
  }

  /** Teams of an account with its role in each. */
  teamsOf(accountId: string): Array<{ team: TeamRecord; role: TeamRole }> {
    const out: Array<{ team: TeamRecord; role: TeamRole }> = [];
    for (const { key: k, value } of this.store.membershipsByAccount.getRange(prefixRange(accountId))) {
      const role = value as TeamRole;
      const team = this.store.teams.get(k.slice(accountId.length + 1));
      if (team) out.push({ team, role });
    }
    return out;
  }

  /** TeamDirectory for the consent page's team picker (docs/rules.md Endpoints 1, Authentication 9). */
  adminTeamsOf(accountId: string): TeamChoice[] {
    return this.teamsOf(accountId).filter((t) => t.role === 'admin').map(({ team }) => ({ id: team.id, name: team.name }));
  }

  members(team: TeamRecord): MembershipRecord[] {
    return [...this.store.memberships.getRange(prefixRange(team.id))].map((e) => e.value);
  }

  /**
   * Adds a member or changes a role.
   * @throws INVALID_PARAMS for a bad role; CONFLICT when it would leave the team without an admin.
   */
  async setMember(team: TeamRecord, accountId: string, role: unknown): Promise<MembershipRecord> {
    if (role !== 'admin' && role !== 'member') throw fail('INVALID_PARAMS', 'role must be "admin" or "member"');
    const now = this.clock.now();
    let m!: MembershipRecord;
    await this.store.env.transaction(() => {
      const current = this.store.memberships.get(key(team.id, accountId));
      if (current?.role === 'admin' && role === 'member') this.#requireAnotherAdmin(team, accountId);
      m = { teamId: team.id, accountId, role, createdAt: current?.createdAt ?? now };
      this.#putMembership(m);
    });
    return m;
  }

  /** Removes a member. @throws NOT_FOUND, CONFLICT for the last admin. */
  async removeMember(team: TeamRecord, accountId: string): Promise<MembershipRecord> {
    let m!: MembershipRecord;
    await this.store.env.transaction(() => {
      const current = this.store.memberships.get(key(team.id, accountId));
      if (!current) throw fail('NOT_FOUND', "Couldn't find that team member.", { resource: 'team-member' });
      if (current.role === 'admin') this.#requireAnotherAdmin(team, accountId);
      this.store.memberships.remove(key(team.id, accountId));
      this.store.membershipsByAccount.remove(key(accountId, team.id));
      m = current;
    });
    return m;
  }

  /** Sets team preferences. */
  async setThirdPartyOAuth(team: TeamRecord, enabled: boolean): Promise<TeamRecord> {
    const updated = { ...team, thirdPartyOAuth: enabled, updatedAt: this.clock.now() };
    await this.store.teams.put(team.id, updated);
    return updated;
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
    return this.roleOf(a.teamId, accountId) === 'admin' ? a : undefined;
  }

  /**
   * Moves an app into a team (its owner, who must administer the team).
   * @throws DENIED otherwise.
   */
  async moveApp(app: AppRecord, team: TeamRecord, accountId: string): Promise<AppRecord> {
    if (this.roleOf(team.id, accountId) !== 'admin') throw fail('DENIED', `Only admins of team ${team.name} can move apps into it.`);
    const updated = { ...app, teamId: team.id, updatedAt: this.clock.now() };
    await this.store.apps.put(app.id, updated);
    return updated;
  }

  #requireAnotherAdmin(team: TeamRecord, leaving: string): void {
    if (!this.members(team).some((m) => m.role === 'admin' && m.accountId !== leaving)) {
      throw fail('CONFLICT', `Team ${team.name} needs at least one admin.`);
    }
  }

  #putMembership(m: MembershipRecord): void {
    this.store.memberships.put(key(m.teamId, m.accountId), m);
    this.store.membershipsByAccount.put(key(m.accountId, m.teamId), m.role);
  }
}
