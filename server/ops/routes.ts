/**
 * Route templates for the access log and metrics labels: the endpoint a request reached, with
 * every variable part (repository name, digest, tag, session id, app) replaced by a placeholder,
 * so label cardinality stays bounded whatever clients send.
 */
import { ROUTE } from '../registry/routes.js';
import { apiRouter } from '../api/routes.js';
import { authRouter } from '../auth-host/routes.js';

/** The four public hosts. */
export type HostName = 'registry' | 'upload' | 'api' | 'auth';

/** Template of a registry (and upload host) path. */
function registryTemplate(path: string): string {
  if (path === '/token' || path === '/v2/_catalog') return path;
  if (path === '/v2/' || path === '/v2') return '/v2/';
  const m = ROUTE.exec(path);
  if (!m) return 'unmatched';
  if (m[2]) return '/v2/<name>/tags/list';
  if (m[3] !== undefined) return '/v2/<name>/manifests/<reference>';
  if (m[4] !== undefined) return m[5] ? '/v2/<name>/blobs/uploads/<session>' : '/v2/<name>/blobs/uploads/';
  return '/v2/<name>/blobs/<digest>';
}

/** The route template of `path` on `host`; `unmatched` for paths no route serves. */
export function routeTemplate(host: HostName, path: string): string {
  switch (host) {
    case 'registry': case 'upload': return registryTemplate(path);
    case 'api': return apiRouter.patternOf(path) ?? 'unmatched';
    case 'auth': return authRouter.patternOf(path) ?? 'unmatched';
  }
}
