/**
 * Registry authentication and access (docs/rules.md Authentication 10):
 * - Basic `_` : <API token>, or `<account e-mail>` : <API key>, on any request;
 * - Bearer <registry token> from GET /token (Docker token flow), or Bearer <API token>.
 * Failures answer 401 with `WWW-Authenticate: Bearer realm="<registry>/token",service=…,scope=…`
 * (plus `error="insufficient_scope"` when a registry token lacks the action), which is what
 * makes docker, skopeo and containerd fetch a token and retry.
 *
 * Authentication and `authorize` run on every request, so they are written over `MaybePromise`
 * (engine/maybe-sync.ts): with the embedded store they answer synchronously, without a promise.
 */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import { authenticateTokenHash, isAuthorizationLive, principalOfAuthorization, type Principal } from '../../engine/identity/authorizations.js';
import { hashToken } from '../../engine/identity/tokens.js';
import { recordUse } from '../../engine/identity/usage.js';
import { registryTokenExpired, verifyRegistryToken, type RegistryClaims } from '../../engine/identity/registry-token.js';
import { isSlipwayError, SlipwayError } from '../../engine/errors.js';
import { parseRepositoryName } from '../../engine/registry/names.js';
import { mayUseRepository, thirdPartyBlock, type RegistryAction } from '../../engine/platform/access.js';
import { usesContainerRegistry } from '../../engine/platform/runtime-rules.js';
import type { AppRecord } from '../../engine/platform/records.js';
import { noteCaller } from '../ops/request-info.js';
import { andThen, type MaybePromise } from '../../engine/maybe-sync.js';

/** An authenticated registry caller. */
export interface Caller {
  principal: Principal;
  /** Present for registry bearer tokens: the repositories and actions the token grants. */
  tokenAccess?: Record<string, string[]>;
}

/** A 401 that carries its challenge. */
export class Challenge extends SlipwayError {
  constructor(message: string, readonly scope: string | undefined, readonly insufficientScope = false) {
    super('UNAUTHORIZED', message);
  }
}

/** The WWW-Authenticate value for a challenge. */
export function challengeHeader(ctx: RegistryContext, c: Challenge): string {
  let v = `Bearer realm="${ctx.urls.registry}/token",service="${serviceName(ctx)}"`;
  if (c.scope) v += `,scope="${c.scope}"`;
  if (c.insufficientScope) v += ',error="insufficient_scope"';
  return v;
}

/** The `service` value of challenges and tokens: the registry's host[:port]. */
export function serviceName(ctx: RegistryContext): string {
  return new URL(ctx.urls.registry).host;
}

/**
 * Reads the credentials of a request.
 * @returns the caller, or null when no credentials were sent.
 * @throws Challenge when credentials were sent but are not valid.
 */
export function authenticate(ctx: RegistryContext, ex: Exchange): MaybePromise<Caller | null> {
  return andThen(readCaller(ctx, ex), (caller) => {
    if (caller) noteCaller(ex, caller.principal);
    return caller;
  });
}

/**
 * An Authorization header, parsed, with what can be computed from it alone: the hash of a
 * token (looked up by hash), or a registry token's claims once its signature is verified. Pure
 * (a function of the header and the server key), so a keep-alive connection keeps it for the
 * next request with the same header (`Exchange.memo`); the records behind it (token,
 * authorization, expiry, revocation) are read again on every request.
 */
type Credentials =
  | { scheme: 'basic'; username: string; tokenHash: string }
  | { scheme: 'registry-token'; claims: RegistryClaims }
  | { scheme: 'bearer'; tokenHash: string };

const invalidRegistryToken = () => new Challenge('registry token is invalid, expired or revoked', undefined);

/** Parses an Authorization header. @throws Challenge for a malformed one or a registry token that fails verification */
function parseCredentials(ctx: RegistryContext, h: string, now: number): Credentials {
  const space = h.indexOf(' ');
  const scheme = h.slice(0, space).toLowerCase();
  const value = h.slice(space + 1).trim();
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new Challenge('malformed Basic credentials', undefined);
    return { scheme: 'basic', username: decoded.slice(0, colon), tokenHash: hashToken(decoded.slice(colon + 1)) };
  }
  if (scheme === 'bearer') {
    if (!value.includes('.')) return { scheme: 'bearer', tokenHash: hashToken(value) };
    const claims = verifyRegistryToken(ctx.keys, value, now);
    if (!claims) throw invalidRegistryToken();
    return { scheme: 'registry-token', claims };
  }
  throw new Challenge(`unsupported authorization scheme "${scheme.slice(0, 20)}"; use Basic or Bearer`, undefined);
}

/** The parsed credentials of `ex`: from the connection's memo when it saw the same header, else parsed (and kept there). */
function credentialsOf(ctx: RegistryContext, ex: Exchange, h: string, now: number): Credentials {
  const kept = ex.memo?.credentials;
  if (kept !== undefined && kept.header === h) return kept.value as Credentials;
  const parsed = parseCredentials(ctx, h, now);
  if (ex.memo) ex.memo.credentials = { header: h, value: parsed };
  return parsed;
}

function readCaller(ctx: RegistryContext, ex: Exchange): MaybePromise<Caller | null> {
  const h = ex.header('authorization');
  if (!h) return null;
  const now = ctx.clock.now();
  const c = credentialsOf(ctx, ex, h, now);
  if (c.scheme === 'basic') return andThen(basicPrincipalOfHash(ctx, c.username, c.tokenHash, now), (principal) => ({ principal }));
  if (c.scheme === 'registry-token') {
    const claims = c.claims;
    if (registryTokenExpired(claims, now)) throw invalidRegistryToken(); // kept claims expire too
    return andThen(isAuthorizationLive(ctx.store.metadata, claims.aid, now), (auth) => {
      if (!auth) throw invalidRegistryToken();
      recordUse(ctx.store.metadata, auth.id, now);
      return {
        principal: principalOfAuthorization(auth),
        tokenAccess: claims.access,
      };
    });
  }
  return andThen(authenticateTokenHash(ctx.store.metadata, c.tokenHash, now), (p) => {
    if (typeof p === 'string') throw new Challenge('access token is invalid, expired or revoked', undefined);
    recordUse(ctx.store.metadata, p.authorizationId, now);
    return { principal: p };
  });
}

/**
 * Basic credentials: `_` or an empty user name (what the platform's CLI and some CI systems
 * send: `Basic base64(":" + token)`) with an API token, or the account's e-mail with its API key.
 * @throws Challenge when they do not match, or when the e-mail is over its length limit
 *         (engine/identifiers.ts; the message names the limit).
 */
export function basicPrincipal(ctx: RegistryContext, username: string, password: string, now: number): MaybePromise<Principal> {
  return basicPrincipalOfHash(ctx, username, hashToken(password), now);
}

/** `basicPrincipal` with the password already hashed (`hashToken`). */
function basicPrincipalOfHash(ctx: RegistryContext, username: string, tokenHash: string, now: number): MaybePromise<Principal> {
  return andThen(authenticateTokenHash(ctx.store.metadata, tokenHash, now), (p) => {
    if (typeof p === 'string') throw new Challenge('invalid username or password: use "_" (or an empty username) or your e-mail as username and your API key as password', undefined);
    const checked = username === '_' || username === '' ? undefined : checkEmail(ctx, username, p);
    return andThen(checked, () => {
      recordUse(ctx.store.metadata, p.authorizationId, now);
      return p;
    });
  });
}

/** Requires that `username` is the e-mail of the account `p` belongs to. @throws Challenge */
async function checkEmail(ctx: RegistryContext, username: string, p: Principal): Promise<void> {
  let account;
  try {
    account = await ctx.accounts.byEmail(username);
  } catch (e) {
    if (isSlipwayError(e)) throw new Challenge(`invalid username: ${e.message}`, undefined);
    throw e;
  }
  if (!account || account.id !== p.accountId) throw new Challenge('invalid username or password: the API key does not belong to that e-mail', undefined);
}

/** The app owning a repository name, or undefined for a malformed name or a missing app. */
export async function appOfRepository(ctx: RegistryContext, repository: string): Promise<AppRecord | undefined> {
  try {
    return await ctx.apps.find(parseRepositoryName(repository).app);
  } catch {
    return undefined;
  }
}

/** Actions a caller may perform on a repository (what the token endpoint grants). */
export async function permittedActions(ctx: RegistryContext, p: Principal, repository: string): Promise<RegistryAction[]> {
  const app = await appOfRepository(ctx, repository);
  if (!app) return [];
  const out: RegistryAction[] = [];
  for (const a of ['pull', 'push', 'delete'] as const) if (await mayUseRepository(ctx.store, p, app, a)) out.push(a);
  return out;
}

/** What `authorize` reads: the apps and the store (the dashboard's context has them too). */
export type RepositoryRules = Pick<RegistryContext, 'apps' | 'store'>;

/**
 * Requires `action` on `repository`.
 * @returns the app that owns the repository.
 * @throws NAME_INVALID for a malformed name; Challenge (401) without credentials or when a
 *         registry token lacks the action; DENIED (403) when the caller may not act on the app.
 *         Synchronous (thrown at once) when the store reads synchronously.
 */
export function authorize(ctx: RepositoryRules, caller: Caller | null, repository: string, action: RegistryAction): MaybePromise<AppRecord> {
  const { app: appName } = parseRepositoryName(repository);
  const scope = `repository:${repository}:${action === 'push' ? 'pull,push' : action}`;
  if (!caller) throw new Challenge('authentication required', scope);
  return andThen(ctx.apps.find(appName), (app) => andThen(app ? mayUseRepository(ctx.store, caller.principal, app, action) : false, (allowed) => {
    if (!app || !allowed) return deny(ctx, caller, repository, appName, app, action);
    if (action === 'push' && !usesContainerRegistry(app)) {
      throw new SlipwayError('DENIED', `requested access to the resource is denied: app "${appName}" is a ${app.generation}-generation app; the container registry is available to cedar-generation apps only`, { name: repository, action });
    }
    if (caller.tokenAccess && !(caller.tokenAccess[repository] ?? []).includes(action)) {
      throw new Challenge(`registry token does not grant ${action} on ${repository}`, scope, true);
    }
    return app;
  }));
}

/** The DENIED refusal of `authorize`, saying why (the failure path: may take more reads). @throws always */
async function deny(ctx: RepositoryRules, caller: Caller, repository: string, appName: string, app: AppRecord | undefined, action: RegistryAction): Promise<never> {
  const blocked = app && await thirdPartyBlock(ctx.store, caller.principal, app);
  const why = !app
    ? `app "${appName}" does not exist or you do not have access to it`
    : blocked
      ? blocked
      : await mayUseRepository(ctx.store, caller.principal, app, 'pull')
      ? `the credentials' scope (${caller.principal.scope.join(', ')}) does not allow ${action}; use a token with write or global scope`
      : `you do not have access to app "${appName}"`;
  throw new SlipwayError('DENIED', `requested access to the resource is denied: ${why}`, { name: repository, action });
}
