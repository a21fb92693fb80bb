/** Everything an auth-host handler needs: the API context plus the pages and cookie settings. */
import type { ApiContext } from '../api/context.js';
import type { Views } from './views.js';
import type { SourceAddresses } from '../http/client-address.js';
import type { GcOptions } from '../../engine/registry/gc.js';

export interface AuthContext extends ApiContext {
  views: Views;
  /** True when the auth URL is https: cookies get Secure and the `__Host-` prefix. */
  secureCookies: boolean;
  /** Longest wait of one CLI-login poll, ms (SLIPWAY_CLI_LOGIN_POLL_WAIT). */
  cliLoginPollMs: number;
  /** Where a request comes from, for per-source limits (SLIPWAY_TRUSTED_PROXIES). */
  sources: SourceAddresses;
  /** The node's GC settings and run interval (seconds; 0 = no scheduled runs), which the dashboard explains before a delete. */
  gc: { options: GcOptions; intervalSeconds: number };
}
