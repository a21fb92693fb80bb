/**
 * OAuth scopes (spec Authentication 6; reference 2.1) and what each permits.
 * - identity: account information, read only
 * - read / write: apps and resources, not account information, not config vars
 * - read-protected / write-protected: as read / write, including config vars
 * - global: everything
 */
export const SCOPES = ['global', 'identity', 'read', 'write', 'read-protected', 'write-protected'] as const;
export type Scope = (typeof SCOPES)[number];

/** What an endpoint needs. */
export type Need = 'account:read' | 'account:write' | 'apps:read' | 'apps:write' | 'config:read' | 'config:write';

const GRANTS: Record<Scope, readonly Need[]> = {
  global: ['account:read', 'account:write', 'apps:read', 'apps:write', 'config:read', 'config:write'],
  identity: ['account:read'],
  read: ['apps:read'],
  write: ['apps:read', 'apps:write'],
  'read-protected': ['apps:read', 'config:read'],
  'write-protected': ['apps:read', 'apps:write', 'config:read', 'config:write'],
};

/** True when `s` is a known scope. */
export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

/** True when any scope in `scope` grants `need`. */
export function allows(scope: readonly string[], need: Need): boolean {
  return scope.some((s) => isScope(s) && GRANTS[s].includes(need));
}

/** The narrowest scopes that grant `need`, for "needs scope X" messages. */
export function scopesGranting(need: Need): Scope[] {
  return SCOPES.filter((s) => GRANTS[s].includes(need));
}
