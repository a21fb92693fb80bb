/**
 * Route templates for the access log and metrics labels: the endpoint a request reached, with
 * every variable part (repository name, digest, tag, session id, app) replaced by a placeholder,
 * so label cardinality stays bounded whatever clients send.
 */
import { matchRegistryPath } from '../registry/routes.js';
import { apiRouter } from '../api/routes.js';
import { authRouter } from '../auth-host/routes.js';

/** The four public hosts. */
export type HostName = 'registry' | 'upload' | 'api' | 'auth';

/** pattern → template, filled on first use (the patterns are a fixed set; this runs per request). */
const registryTemplates = new Map<string, string>();

/**
 * Template of a registry (and upload host) path: its REGISTRY_ROUTES pattern with `:param`
 * written `<param>` (`/v2/<name>/referrers/<digest>`).
 */
function registryTemplate(path: string): string {
  const m = matchRegistryPath(path);
  if (!m) return 'unmatched';
  let template = registryTemplates.get(m.pattern);
  if (template === undefined) registryTemplates.set(m.pattern, template = m.pattern.replace(/:([a-z]+)/g, '<$1>'));
  return template;
}

/** The route template of `path` on `host`; `unmatched` for paths no route serves. */
export function routeTemplate(host: HostName, path: string): string {
  switch (host) {
    case 'registry': case 'upload': return registryTemplate(path);
    case 'api': return apiRouter.patternOf(path) ?? 'unmatched';
    case 'auth': return authRouter.patternOf(path) ?? 'unmatched';
  }
}
