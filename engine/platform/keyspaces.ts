/**
 * The platform domain's keyspaces: Apps, releases, formations, config vars, teams and memberships. Only modules of engine/platform/ may import this
 * file (test/engine/import-rules.test.ts); other domains call this domain's service functions.
 * Names are the LMDB database names the data has always had (docs/storage.md).
 */
import { keyspace } from '../storage/metadata.js';
import type { AppRecord, FormationRecord, ReleaseRecord } from './records.js';
import type { MembershipRecord, TeamRecord } from './teams.js';

/** app id → app record. */
export const apps = keyspace<AppRecord>('platform', 'apps');
/** app name → app id. */
export const appsByName = keyspace<string>('platform', 'apps-by-name');
/** `app id␟version` (version zero-padded to 10 digits) → release record. */
export const releases = keyspace<ReleaseRecord>('platform', 'releases');
/** `app id␟process type` → formation entry. */
export const formations = keyspace<FormationRecord>('platform', 'formations');
/** app id → config vars (name → value). Runtime secrets: readable only with *-protected or global scope. */
export const configVars = keyspace<Record<string, string>>('platform', 'config-vars');
/** team id → team record. */
export const teams = keyspace<TeamRecord>('platform', 'teams');
/** team name → team id. */
export const teamsByName = keyspace<string>('platform', 'teams-by-name');
/** `team id␟account id` → membership. */
export const memberships = keyspace<MembershipRecord>('platform', 'memberships');
/** `account id␟team id` → role (the account's teams). */
export const membershipsByAccount = keyspace<string>('platform', 'memberships-by-account');
