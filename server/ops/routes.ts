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
function registryTemplate(path: string, pattern: string | undefined): string {
  if (pattern === undefined) {
    const m = matchRegistryPath(path);
    if (!m) return 'unmatched';
    pattern = m.pattern;
  }
  let template = registryTemplates.get(pattern);
  if (template === undefined) registryTemplates.set(pattern, template = pattern.replace(/:([a-z]+)/g, '<$1>'));
  return template;
}

/**
 * The route template of `path` on `host`; `unmatched` for paths no route serves.
 * @param pattern on the registry and upload hosts, the REGISTRY_ROUTES pattern the dispatcher
 *        already matched for `path` (server/ops/request-info.ts `noteRoute`), which spares
 *        matching the path again; undefined when none was noted (the path is matched here).
 */
export function routeTemplate(host: HostName, path: string, pattern?: string): string {
  switch (host) {
    case 'registry': case 'upload': return registryTemplate(path, pattern);
    case 'api': return apiRouter.patternOf(path) ?? 'unmatched';
    case 'auth': return authRouter.patternOf(path) ?? 'unmatched';
  }
}
