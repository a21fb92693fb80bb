/**
 * OAuth scopes (docs/rules.md Authentication 6-7; docs/platform-conventions.md 2.1) and what each permits.
 * - identity: account information, read only
 * - read / write: apps and resources, not account information, not config vars
 * - read-protected / write-protected: as read / write, including config vars
 * - global: everything, including managing OAuth authorizations and clients
 */
import { fail } from '../errors.js';

export const SCOPES = ['global', 'identity', 'read', 'write', 'read-protected', 'write-protected'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * What an endpoint needs. `oauth:*` (authorizations and clients) is granted by global only:
 * a narrower token must not mint or list tokens wider than itself.
 */
export type Need =
  | 'account:read' | 'account:write'
  | 'apps:read' | 'apps:write'
  | 'config:read' | 'config:write'
  | 'oauth:read' | 'oauth:write';

const GRANTS: Record<Scope, readonly Need[]> = {
  global: ['account:read', 'account:write', 'apps:read', 'apps:write', 'config:read', 'config:write', 'oauth:read', 'oauth:write'],
  identity: ['account:read'],
  read: ['apps:read'],
  write: ['apps:read', 'apps:write'],
  'read-protected': ['apps:read', 'config:read'],
  'write-protected': ['apps:read', 'apps:write', 'config:read', 'config:write'],
};

/** What each scope allows, in plain words, for the consent page (docs/platform-conventions.md 2.1, S3 authorize view). */
export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  global: 'Read and change everything in your account: your account details, all your apps and their resources, including configuration and secrets, and your OAuth authorizations.',
  identity: 'Read your account information (e-mail address, name). Nothing else.',
  read: 'See your apps and their resources. Not your account information, and not configuration variables (no secrets such as database URLs).',
  write: 'See and change your apps and their resources. Not your account information, and not configuration variables.',
  'read-protected': 'See your apps and their resources, including configuration variables (secrets such as database URLs). Not your account information.',
  'write-protected': 'See and change your apps and their resources, including configuration variables (secrets such as database URLs). Not your account information.',
};

/** True when `s` is a known scope. */
export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

/** GRANTS as sets, by scope name (built once: `allows` runs on every authenticated request). */
const GRANTED = new Map<string, ReadonlySet<Need>>(SCOPES.map((s) => [s, new Set(GRANTS[s])]));

/** True when any scope in `scope` grants `need` (unknown scope names grant nothing). */
export function allows(scope: readonly string[], need: Need): boolean {
  for (const s of scope) if (GRANTED.get(s)?.has(need)) return true;
  return false;
}

/** The scopes that grant `need`, narrowest first, for "needs scope X" messages. */
export function scopesGranting(need: Need): Scope[] {
  return SCOPES.filter((s) => GRANTS[s].includes(need)).sort((a, b) => GRANTS[a].length - GRANTS[b].length);
}

/**
 * Validates a list of scope names: de-duplicated, in the canonical order of `SCOPES`.
 * @throws INVALID_SCOPE naming the first unknown scope, or when the list is empty.
 */
export function normalizeScopes(names: readonly string[]): Scope[] {
  const unknown = names.find((n) => !isScope(n));
  if (unknown !== undefined) throw fail('INVALID_SCOPE', `Unknown scope "${unknown.slice(0, 60)}". Valid scopes: ${SCOPES.join(', ')}.`);
  if (names.length === 0) throw fail('INVALID_SCOPE', `At least one scope is required. Valid scopes: ${SCOPES.join(', ')}.`);
  return SCOPES.filter((s) => names.includes(s));
}

/**
 * Parses the `scope` parameter of an authorize or token request: space-delimited (RFC 6749
 * §3.3) or comma-delimited (the platform's own form, docs/platform-conventions.md 2.6); both are accepted.
 * @throws INVALID_SCOPE for an empty or unknown scope.
 */
export function parseScopeParam(raw: string): Scope[] {
  return normalizeScopes(raw.split(/[\s,]+/).filter(Boolean));
}
