/** Platform API representations (docs/platform-conventions.md 3.1-3.2). */
import { createHash } from 'node:crypto';
import { isoTime } from '../../engine/clock.js';
import type { Account } from '../../engine/identity/records.js';
import type { AppRecord } from '../../engine/platform/records.js';

/** A stable UUID-shaped id for named constants (stacks, generations, regions). */
export function stableId(name: string): string {
  const h = createHash('sha256').update('slipway:' + name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const named = (name: string) => ({ id: stableId(name), name });

export function accountJson(a: Account) {
  return {
    id: a.id, email: a.email, name: a.name, allow_tracking: false, beta: false,
    created_at: isoTime(a.createdAt), updated_at: isoTime(a.updatedAt), last_login: null, verified: true,
    two_factor_authentication: true, federated: false, identity_provider: null, sms_number: null,
    suspended_at: null, delinquent_at: null, country_of_residence: null, default_team: null, default_organization: null,
  };
}

export function appJson(app: AppRecord, owner: Account | undefined, urls: { registry: string }, webUrl: string | null, team?: { id: string; name: string }) {
  return {
    id: app.id, name: app.name,
    stack: named(app.stack), build_stack: named(app.buildStack), generation: named(app.generation),
    owner: { id: app.ownerId, email: owner?.email ?? null },
    team: team ? { id: team.id, name: team.name } : null, organization: null, region: named('us'),
    space: app.space === null ? null : { id: stableId('space:' + app.space), name: app.space, shield: false },
    acm: false, maintenance: app.maintenance === true, internal_routing: null,
    git_url: null, web_url: webUrl, buildpack_provided_description: null, repo_size: null, slug_size: null,
    archived_at: null, released_at: null,
    registry: `${new URL(urls.registry).host}/${app.name}`,
    created_at: isoTime(app.createdAt), updated_at: isoTime(app.updatedAt),
  };
}
