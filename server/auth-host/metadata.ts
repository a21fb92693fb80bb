/**
 * OAuth 2.0 Authorization Server Metadata (RFC 8414 §2-3) at
 * GET /.well-known/oauth-authorization-server: what a client library needs to find the
 * endpoints and supported features without configuration.
 */
import type { AuthContext } from './context.js';
import { SCOPES } from '../../engine/identity/scope.js';

/** The metadata document; `issuer` is the configured public auth URL. */
export function authorizationServerMetadata(ctx: AuthContext) {
  const issuer = ctx.urls.auth;
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    code_challenge_methods_supported: ['S256'],
  };
}
