/**
 * Validation of an authorization request (docs/rules.md Endpoints 1; RFC 6749 §4.1.1, §4.1.2.1; RFC 7636
 * §4.3), shared by the GET that shows consent and the POST that answers it. The order matters:
 * until the client and its redirect URI are known good, errors are shown on a page and never
 * redirected (an unknown client or a foreign redirect_uri would make us an open redirector);
 * after that, errors go back to the client as `error=…&state=…`.
 */
import { isSlipwayError } from '../../engine/errors.js';
import { parseScopeParam, type Scope } from '../../engine/identity/scope.js';
import { isS256Challenge } from '../../engine/oauth/pkce.js';
import { withQuery } from '../../engine/oauth/redirect-uri.js';
import type { Clients } from '../../engine/oauth/clients.js';
import type { ClientRecord } from '../../engine/oauth/records.js';

/** A valid request. */
export interface AuthorizeRequest {
  client: ClientRecord;
  redirectUri: string;
  redirectUriGiven: boolean;
  scope: Scope[];
  /** Echoed unchanged (docs/rules.md Endpoints 1); null when not sent. */
  state: string | null;
  codeChallenge: string | null;
  /** The parameters to carry through the consent form. */
  params: Array<[string, string]>;
}

export type AuthorizeCheck =
  | { kind: 'ok'; request: AuthorizeRequest }
  /** Show an error page (no trustworthy redirect URI). */
  | { kind: 'page'; message: string }
  /** Send the user agent back to the client with an error (RFC 6749 §4.1.2.1). */
  | { kind: 'redirect'; location: string };

/** Longest `state` accepted, characters. */
export const MAX_STATE_LENGTH = 2000;

/** The parameters of an authorization request that are kept; others are ignored (RFC 6749 §3.1). */
const KEPT = ['client_id', 'response_type', 'scope', 'state', 'redirect_uri', 'code_challenge', 'code_challenge_method'] as const;

/**
 * Checks an authorization request.
 * @param params the query (GET) or form (POST) parameters
 */
export async function checkAuthorizeRequest(clients: Clients, params: URLSearchParams): Promise<AuthorizeCheck> {
  const repeated = KEPT.find((k) => params.getAll(k).length > 1);
  const get = (k: string) => params.get(k);
  const clientId = get('client_id');
  if (!clientId) return { kind: 'page', message: 'The application sent no client_id, so we cannot tell who is asking. Please tell its developers.' };
  const client = await clients.get(clientId);
  if (!client) return { kind: 'page', message: 'Unknown OAuth client: the application is not registered here (its client_id is unknown). Please tell its developers.' };
  const givenRedirect = get('redirect_uri');
  if (givenRedirect !== null && givenRedirect !== client.redirectUri) {
    return { kind: 'page', message: `The redirect_uri does not match the one registered for ${client.name}; for your safety you are not sent there.` };
  }
  if (repeated === 'client_id' || repeated === 'redirect_uri') return { kind: 'page', message: `The parameter ${repeated} was sent more than once.` };
  const state = get('state');
  const back = (error: string, description: string): AuthorizeCheck => ({
    kind: 'redirect',
    location: withQuery(client.redirectUri, { error, error_description: description, state: state ?? undefined }),
  });
  if (repeated) return back('invalid_request', `The parameter ${repeated} must not be repeated.`);
  if (state !== null && state.length > MAX_STATE_LENGTH) return back('invalid_request', `state is longer than ${MAX_STATE_LENGTH} characters.`);
  const responseType = get('response_type');
  if (!responseType) return back('invalid_request', 'response_type is required; the only supported value is code.');
  if (responseType !== 'code') return back('unsupported_response_type', 'The only supported response_type is code.');
  const rawScope = get('scope');
  if (rawScope === null || rawScope.trim() === '') return back('invalid_scope', 'scope is required (for example "identity" or "read write").');
  let scope: Scope[];
  try {
    scope = parseScopeParam(rawScope);
  } catch (e) {
    if (isSlipwayError(e)) return back('invalid_scope', e.message);
    throw e;
  }
  const challenge = get('code_challenge');
  const method = get('code_challenge_method');
  if (challenge !== null || method !== null) {
    if (method !== 'S256') return back('invalid_request', 'code_challenge_method must be S256 (plain is not supported).');
    if (challenge === null || !isS256Challenge(challenge)) return back('invalid_request', 'code_challenge must be the 43-character base64url SHA-256 of the code_verifier.');
  }
  const kept: Array<[string, string]> = [];
  for (const k of KEPT) {
    const v = get(k);
    if (v !== null) kept.push([k, v]);
  }
  return {
    kind: 'ok',
    request: { client, redirectUri: client.redirectUri, redirectUriGiven: givenRedirect !== null, scope, state, codeChallenge: challenge, params: kept },
  };
}

/** The client's redirect URI with an error and the state (RFC 6749 §4.1.2.1). */
export function errorRedirect(req: AuthorizeRequest, error: string, description: string): string {
  return withQuery(req.redirectUri, { error, error_description: description, state: req.state ?? undefined });
}

/** The client's redirect URI with the code and the state (RFC 6749 §4.1.2). */
export function codeRedirect(req: AuthorizeRequest, code: string): string {
  return withQuery(req.redirectUri, { code, state: req.state ?? undefined });
}

