/**
 * The platform API host: one route table and the dispatcher that applies the conventions of
 * every endpoint (docs/rules.md Authentication, Versioning; docs/platform-conventions.md 1) in this order:
 *   route (404 / 405) → Accept version (406) → credentials (401) → rate limit (429)
 *   → scope (403) → handler.
 * Each route declares what it needs, so no handler can forget the scope check; the
 * authorization matrix test walks this table.
 */
import type { Exchange } from '../http/exchange.js';
import type { ApiCall, ApiContext } from './context.js';
import type { Need } from '../../engine/identity/scope.js';
import { Router } from '../http/router.js';
import { fail } from '../../engine/errors.js';
import { negotiate } from './accept.js';
import { readCredentials, requireRouteAccess } from './authenticate.js';
import { noteCaller } from '../ops/request-info.js';
import { sendApiError } from './respond.js';
import { getAccount, getAccountFeature, getRateLimits, listAccountFeatures } from './account.js';
import { getPipelineCoupling, getReleaseConfigVars, listAddons, listCollaborators, listUserApps } from './app-extras.js';
import { getDyno, listDynos, restartAll, restartDyno, restartType } from './dynos.js';
import { createApp, deleteApp, getApp, listApps } from './apps.js';
import {
  createAuthorization, getAuthorization, listAuthorizations, regenerateAuthorization, revokeAuthorization, updateAuthorization,
} from './authorizations.js';
import { createClient, deleteClient, getClient, listClients, rotateClientSecret, updateClient } from './clients.js';
import { deleteFormationType, getFormation, listFormation, updateFormation, updateFormationType } from './formation.js';
import { createRelease, getRelease, listReleases } from './releases.js';
import { createWebhook, deleteWebhook, getDelivery, getEvent, getWebhook, listDeliveries, listEvents, listWebhooks, updateWebhook } from './webhooks.js';
import { getConfigVars, getFeature, listFeatures, updateApp, updateConfigVars, updateFeature } from './app-settings.js';
import {
  createTeam, createTeamAuthorization, getPreferences, listTeamFeatures, getTeam, listMembers, listTeamApps, listTeamAuthorizations, listTeams, putMember, removeMember, updatePreferences,
} from './teams.js';

export type ApiHandler = (ctx: ApiContext, call: ApiCall) => Promise<void>;

/** One endpoint of the API host. */
export interface ApiRoute {
  method: string;
  path: string;
  /**
   * A scope need (docs/rules.md Authentication 6); 'token' = any valid token, whatever its scope;
   * 'public' = credentials optional (checked when sent).
   */
  access: Need | 'token' | 'public';
  /** Only `Authorization: Bearer` (docs/rules.md Authentication 4). */
  bearerOnly?: boolean;
  /** Takes a token from the rate-limit pool (default true; docs/platform-conventions.md 1.6). */
  counted?: boolean;
  /** A user-only action: team tokens are refused whatever their scope (docs/rules.md Authentication 8). */
  userOnly?: boolean;
  handler: ApiHandler;
}

export const API_ROUTES: readonly ApiRoute[] = [
  { method: 'GET', path: '/account', access: 'account:read', userOnly: true, handler: getAccount },
  { method: 'GET', path: '/account/rate-limits', access: 'token', counted: false, handler: getRateLimits },
  { method: 'GET', path: '/account/features', access: 'account:read', userOnly: true, handler: listAccountFeatures },
  { method: 'GET', path: '/account/features/:feature', access: 'account:read', userOnly: true, handler: getAccountFeature },
  { method: 'PATCH', path: '/account/features/:feature', access: 'account:write', userOnly: true, handler: getAccountFeature },
  { method: 'GET', path: '/addons', access: 'apps:read', handler: listAddons },
  { method: 'POST', path: '/apps', access: 'apps:write', handler: createApp },
  { method: 'GET', path: '/apps', access: 'apps:read', handler: listApps },
  { method: 'GET', path: '/apps/:app', access: 'apps:read', handler: getApp },
  { method: 'PATCH', path: '/apps/:app', access: 'apps:write', handler: updateApp },
  { method: 'DELETE', path: '/apps/:app', access: 'apps:write', handler: deleteApp },
  { method: 'GET', path: '/apps/:app/addons', access: 'apps:read', handler: listAddons },
  { method: 'GET', path: '/apps/:app/collaborators', access: 'apps:read', handler: listCollaborators },
  { method: 'GET', path: '/apps/:app/dynos', access: 'apps:read', handler: listDynos },
  { method: 'DELETE', path: '/apps/:app/dynos', access: 'apps:write', handler: restartAll },
  { method: 'GET', path: '/apps/:app/dynos/:dyno', access: 'apps:read', handler: getDyno },
  { method: 'DELETE', path: '/apps/:app/dynos/:dyno', access: 'apps:write', handler: restartDyno },
  { method: 'POST', path: '/apps/:app/dynos/:dyno/actions/stop', access: 'apps:write', handler: restartDyno },
  { method: 'DELETE', path: '/apps/:app/formations/:type', access: 'apps:write', handler: restartType },
  { method: 'POST', path: '/apps/:app/formations/:type/actions/stop', access: 'apps:write', handler: restartType },
  { method: 'GET', path: '/apps/:app/pipeline-couplings', access: 'apps:read', handler: getPipelineCoupling },
  { method: 'GET', path: '/apps/:app/config-vars', access: 'config:read', handler: getConfigVars },
  { method: 'PATCH', path: '/apps/:app/config-vars', access: 'config:write', handler: updateConfigVars },
  { method: 'GET', path: '/apps/:app/features', access: 'apps:read', handler: listFeatures },
  { method: 'GET', path: '/apps/:app/features/:feature', access: 'apps:read', handler: getFeature },
  { method: 'PATCH', path: '/apps/:app/features/:feature', access: 'apps:write', handler: updateFeature },
  { method: 'GET', path: '/apps/:app/formation', access: 'apps:read', handler: listFormation },
  { method: 'POST', path: '/apps/:app/webhooks', access: 'apps:write', handler: createWebhook },
  { method: 'GET', path: '/apps/:app/webhooks', access: 'apps:read', handler: listWebhooks },
  { method: 'GET', path: '/apps/:app/webhooks/:webhook', access: 'apps:read', handler: getWebhook },
  { method: 'PATCH', path: '/apps/:app/webhooks/:webhook', access: 'apps:write', handler: updateWebhook },
  { method: 'DELETE', path: '/apps/:app/webhooks/:webhook', access: 'apps:write', handler: deleteWebhook },
  { method: 'GET', path: '/apps/:app/webhook-deliveries', access: 'apps:read', handler: listDeliveries },
  { method: 'GET', path: '/apps/:app/webhook-deliveries/:delivery', access: 'apps:read', handler: getDelivery },
  { method: 'GET', path: '/apps/:app/webhook-events', access: 'apps:read', handler: listEvents },
  { method: 'GET', path: '/apps/:app/webhook-events/:event', access: 'apps:read', handler: getEvent },
  { method: 'PATCH', path: '/apps/:app/formation', access: 'apps:write', handler: updateFormation },
  { method: 'GET', path: '/apps/:app/formation/:type', access: 'apps:read', handler: getFormation },
  { method: 'PATCH', path: '/apps/:app/formation/:type', access: 'apps:write', handler: updateFormationType },
  { method: 'DELETE', path: '/apps/:app/formation/:type', access: 'apps:write', handler: deleteFormationType },
  { method: 'GET', path: '/apps/:app/releases', access: 'apps:read', handler: listReleases },
  { method: 'POST', path: '/apps/:app/releases', access: 'apps:write', handler: createRelease },
  { method: 'GET', path: '/apps/:app/releases/:release', access: 'apps:read', handler: getRelease },
  { method: 'GET', path: '/apps/:app/releases/:release/config-vars', access: 'config:read', handler: getReleaseConfigVars },
  { method: 'POST', path: '/oauth/authorizations', access: 'oauth:write', bearerOnly: true, userOnly: true, handler: createAuthorization },
  { method: 'GET', path: '/oauth/authorizations', access: 'oauth:read', bearerOnly: true, userOnly: true, handler: listAuthorizations },
  { method: 'GET', path: '/oauth/authorizations/:id', access: 'oauth:read', bearerOnly: true, userOnly: true, handler: getAuthorization },
  { method: 'PATCH', path: '/oauth/authorizations/:id', access: 'oauth:write', bearerOnly: true, userOnly: true, handler: updateAuthorization },
  { method: 'DELETE', path: '/oauth/authorizations/:id', access: 'oauth:write', bearerOnly: true, userOnly: true, handler: revokeAuthorization },
  { method: 'POST', path: '/oauth/authorizations/:id/actions/regenerate-tokens', access: 'oauth:write', bearerOnly: true, userOnly: true, handler: regenerateAuthorization },
  { method: 'POST', path: '/oauth/clients', access: 'oauth:write', userOnly: true, handler: createClient },
  { method: 'GET', path: '/oauth/clients', access: 'oauth:read', userOnly: true, handler: listClients },
  { method: 'GET', path: '/oauth/clients/:id', access: 'public', handler: getClient },
  { method: 'PATCH', path: '/oauth/clients/:id', access: 'oauth:write', userOnly: true, handler: updateClient },
  { method: 'DELETE', path: '/oauth/clients/:id', access: 'oauth:write', userOnly: true, handler: deleteClient },
  { method: 'POST', path: '/oauth/clients/:id/actions/rotate-credentials', access: 'oauth:write', userOnly: true, handler: rotateClientSecret },
  { method: 'GET', path: '/teams', access: 'account:read', userOnly: true, handler: listTeams },
  { method: 'POST', path: '/teams', access: 'account:write', userOnly: true, handler: createTeam },
  { method: 'GET', path: '/teams/:team', access: 'account:read', userOnly: true, handler: getTeam },
  { method: 'GET', path: '/teams/:team/preferences', access: 'account:read', userOnly: true, handler: getPreferences },
  { method: 'PATCH', path: '/teams/:team/preferences', access: 'account:write', userOnly: true, handler: updatePreferences },
  { method: 'GET', path: '/teams/:team/members', access: 'account:read', userOnly: true, handler: listMembers },
  { method: 'PUT', path: '/teams/:team/members', access: 'account:write', userOnly: true, handler: putMember },
  { method: 'DELETE', path: '/teams/:team/members/:member', access: 'account:write', userOnly: true, handler: removeMember },
  { method: 'GET', path: '/teams/:team/features', access: 'account:read', userOnly: true, handler: listTeamFeatures },
  { method: 'GET', path: '/teams/:team/apps', access: 'apps:read', handler: listTeamApps },
  { method: 'POST', path: '/teams/:team/authorizations', access: 'oauth:write', bearerOnly: true, userOnly: true, handler: createTeamAuthorization },
  { method: 'GET', path: '/teams/:team/authorizations', access: 'oauth:read', bearerOnly: true, userOnly: true, handler: listTeamAuthorizations },
  { method: 'GET', path: '/users/:user/apps', access: 'apps:read', handler: listUserApps },
];

/**
 * The route `method path` (a pattern exactly as listed above), for callers that perform an API
 * action by other means (the dashboard) and must apply its access rule.
 * @throws Error when no such route exists (a programming error).
 */
export function apiRoute(method: string, path: string): ApiRoute {
  const r = API_ROUTES.find((x) => x.method === method && x.path === path);
  if (!r) throw new Error(`no API route ${method} ${path}`);
  return r;
}

export const apiRouter = new Router<ApiRoute>();
for (const r of API_ROUTES) apiRouter.add(r.method, r.path, r);

const OVERRIDABLE = new Set(['PATCH', 'PUT', 'DELETE']);

/** The method, honouring `X-Http-Method-Override` on POST (docs/platform-conventions.md 1.1). */
function methodOf(ex: Exchange): string {
  if (ex.method !== 'POST') return ex.method;
  const o = ex.header('x-http-method-override').toUpperCase();
  return OVERRIDABLE.has(o) ? o : 'POST';
}

/** Handles one API request; always ends in a response. */
export async function handleApi(ctx: ApiContext, ex: Exchange): Promise<void> {
  let remaining: number | null = null;
  try {
    const method = methodOf(ex);
    const m = apiRouter.match(method, ex.path);
    if (m.kind === 'not-found') throw fail('NOT_FOUND', `No such endpoint: ${method} ${ex.path.slice(0, 200)}`);
    if (m.kind === 'method-not-allowed') throw fail('METHOD_NOT_ALLOWED', `${method} is not allowed here; allowed: ${m.allowed.join(', ')}`, { allow: m.allowed });
    const route = m.value;
    const { variant } = negotiate(ex.header('accept'), ctx.vendor, ctx.acceptVendors);
    const principal = await readCredentials(ctx, ex, route.bearerOnly === true);
    if (principal) noteCaller(ex, principal);
    if (!principal && route.access !== 'public') throw fail('UNAUTHORIZED', 'No credentials provided. Send "Authorization: Bearer <token>".');
    if (principal) {
      const state = await (route.counted === false ? ctx.rateLimiter.peek(principal.accountId) : ctx.rateLimiter.take(principal.accountId));
      remaining = state.remaining;
      if (!state.ok) throw fail('RATE_LIMITED', 'Your account reached the API rate limit\nPlease wait a few minutes before making new requests');
      requireRouteAccess(principal, route);
    }
    await route.handler(ctx, { ex, params: m.params, principal, remaining, variant });
  } catch (e) {
    sendApiError(ctx, ex, e, remaining);
  }
}
