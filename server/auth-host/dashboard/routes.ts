/**
 * The dashboard's pages on the auth host (server-rendered; every core action is a plain form
 * post, so each works without JavaScript). See the modules for what each page shows.
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import type { Router } from '../../http/router.js';
import { showApplications, submitCreateAuthorization, submitRegenerate, submitRevoke } from './account.js';
import { showClient, showClients, submitCreateClient, submitDeleteClient, submitRotateClient, submitUpdateClient } from './clients.js';
import { showTeam, showTeams, submitCreateTeam, submitMember, submitPreferences, submitRemoveMember, submitTeamAuthorization } from './teams.js';
import { showApp, showApps, submitCreateApp, submitRollback, submitScale } from './apps.js';
import { showConfigVars, submitRemoveConfigVar, submitReveal, submitSetConfigVar } from './config-vars.js';
import { showAppSettings, submitDeleteApp, submitRename, submitTransfer } from './app-settings.js';
import { showImage, showRegistry, submitDeleteImage, submitDeleteTag } from './registry.js';
import { showReleases } from './releases.js';
import { showWebhook, showWebhooks, submitCreateWebhook, submitRemoveWebhook, submitUpdateWebhook } from './webhooks.js';

type Handler = (ctx: AuthContext, ex: Exchange, params: Record<string, string>) => Promise<void>;

/** Adds the dashboard's routes to the auth host's router. */
export function addDashboardRoutes(router: Router<Handler>): void {
  router
    .add('GET', '/account/applications', showApplications)
    .add('POST', '/account/authorizations', submitCreateAuthorization)
    .add('POST', '/account/authorizations/:id/regenerate', submitRegenerate)
    .add('POST', '/account/authorizations/:id/revoke', submitRevoke)
    .add('GET', '/account/clients', showClients)
    .add('POST', '/account/clients', submitCreateClient)
    .add('GET', '/account/clients/:id', showClient)
    .add('POST', '/account/clients/:id', submitUpdateClient)
    .add('POST', '/account/clients/:id/rotate', submitRotateClient)
    .add('POST', '/account/clients/:id/delete', submitDeleteClient)
    .add('GET', '/teams', showTeams)
    .add('POST', '/teams', submitCreateTeam)
    .add('GET', '/teams/:team', showTeam)
    .add('POST', '/teams/:team/members', submitMember)
    .add('POST', '/teams/:team/members/:member/remove', submitRemoveMember)
    .add('POST', '/teams/:team/authorizations', submitTeamAuthorization)
    .add('POST', '/teams/:team/preferences', submitPreferences)
    .add('GET', '/apps', showApps)
    .add('POST', '/apps', submitCreateApp)
    .add('GET', '/apps/:app', showApp)
    .add('POST', '/apps/:app/formation/:type', submitScale)
    .add('POST', '/apps/:app/rollback', submitRollback)
    .add('GET', '/apps/:app/config', showConfigVars)
    .add('POST', '/apps/:app/config', submitSetConfigVar)
    .add('POST', '/apps/:app/config/reveal', submitReveal)
    .add('POST', '/apps/:app/config/remove', submitRemoveConfigVar)
    .add('GET', '/apps/:app/webhooks', showWebhooks)
    .add('POST', '/apps/:app/webhooks', submitCreateWebhook)
    .add('GET', '/apps/:app/webhooks/:webhook', showWebhook)
    .add('POST', '/apps/:app/webhooks/:webhook', submitUpdateWebhook)
    .add('POST', '/apps/:app/webhooks/:webhook/remove', submitRemoveWebhook)
    .add('GET', '/apps/:app/settings', showAppSettings)
    .add('POST', '/apps/:app/rename', submitRename)
    .add('POST', '/apps/:app/transfer', submitTransfer)
    .add('POST', '/apps/:app/delete', submitDeleteApp)
    .add('GET', '/apps/:app/releases', showReleases)
    .add('GET', '/apps/:app/registry', showRegistry)
    .add('GET', '/apps/:app/registry/:type/images/:digest', showImage)
    .add('POST', '/apps/:app/registry/:type/images/:digest/delete', submitDeleteImage)
    .add('POST', '/apps/:app/registry/:type/tags/:tag/delete', submitDeleteTag);
}
