/** Everything a platform API handler needs, built once by server/main.ts. */
import type { Store } from '../../engine/store.js';
import type { Clock } from '../../engine/clock.js';
import type { Accounts } from '../../engine/identity/accounts.js';
import type { ServerKeys } from '../../engine/identity/keys.js';
import type { Principal } from '../../engine/identity/authorizations.js';
import type { Apps } from '../../engine/platform/apps.js';
import type { Registry } from '../../engine/registry/registry.js';
import type { Releases } from '../../engine/platform/releases.js';
import type { Dynos } from '../../engine/platform/dynos.js';
import type { AppSettings } from '../../engine/platform/app-settings.js';
import type { Teams } from '../../engine/platform/teams.js';
import type { OAuth } from '../../engine/oauth/service.js';
import type { Exchange } from '../http/exchange.js';
import type { Logger } from '../log.js';
import type { RateLimitPool } from '../../engine/identity/rate-limit.js';
import type { AppWebhooks } from '../../engine/webhooks/app-webhooks.js';

export interface ApiContext {
  store: Store;
  clock: Clock;
  accounts: Accounts;
  apps: Apps;
  registry: Registry;
  releases: Releases;
  dynos: Dynos;
  settings: AppSettings;
  teams: Teams;
  /** App webhooks (docs/webhooks.md). */
  webhooks: AppWebhooks;
  oauth: OAuth;
  keys: ServerKeys;
  /** Per-account API rate limit, shared with the auth host's refresh grant. */
  rateLimiter: RateLimitPool;
  log: Logger;
  /** `application/vnd.<vendor>+json`. */
  vendor: string;
  /** Further vendor names accepted in Accept as the same API (SLIPWAY_ACCEPT_VENDORS). */
  acceptVendors: readonly string[];
  urls: { api: string; registry: string; auth: string };
  /** An app's `web_url` (server/api/web-url.ts); set once the API URL is known. */
  webUrl: (app: string) => string;
}

/** One API request after routing, version negotiation, authentication and rate limiting. */
export interface ApiCall {
  ex: Exchange;
  /** Captured path segments (percent-decoded). */
  params: Record<string, string>;
  /** The caller; null only on public routes called without credentials. */
  principal: Principal | null;
  /** Tokens left in the caller's rate-limit pool, sent as RateLimit-Remaining; null without an account. */
  remaining: number | null;
  /** The `version=3.<variant>` of the Accept header, or null. */
  variant: string | null;
}
