/** Tag list and catalog with `n`/`last` pagination and RFC 5988 Link (distribution "Content discovery"). */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import { parseRepositoryName } from '../../engine/registry/names.js';
import type { Admission } from './admission.js';
import type { RouteParams } from './routes.js';
import { repositoryAccess } from '../../engine/platform/access.js';
import { fail } from '../../engine/errors.js';
import { sendJson } from '../http/respond.js';
import { API_VERSION } from './context.js';
import type { Page } from '../../engine/registry/registry.js';

/** Largest page served; a larger `n` is clamped (OCI distribution spec allows this). */
export const MAX_PAGE = 1000;

function pageParams(ex: Exchange): { n: number; last: string | undefined; explicit: boolean } {
  const raw = ex.query.get('n');
  const last = ex.query.get('last') ?? undefined;
  if (raw === null || raw === '') return { n: Number.MAX_SAFE_INTEGER - 1, last, explicit: false };
  if (!/^\d+$/.test(raw)) throw fail('PAGINATION_INVALID', `invalid number of results requested: "${raw.slice(0, 20)}"`, { n: raw.slice(0, 20) });
  return { n: Math.min(Number(raw), MAX_PAGE), last, explicit: true };
}

function linkHeader(path: string, n: number, page: Page): Record<string, string> {
  if (page.next === undefined) return {};
  return { link: `<${path}?n=${n}&last=${encodeURIComponent(page.next)}>; rel="next"` };
}

/** GET/HEAD of a repository's tags (admitted for pull). */
export async function listTags(ctx: RegistryContext, ex: Exchange, _admitted: Admission, { name: repository }: RouteParams): Promise<void> {
  const { n, last } = pageParams(ex);
  if (!(await ctx.registry.hasRepository(repository))) throw fail('NAME_UNKNOWN', `repository name not known to registry: ${repository}`, { name: repository });
  const page = await ctx.registry.listTags(repository, n, last);
  sendJson(ex, 200, { name: repository, tags: page.items }, { 'docker-distribution-api-version': API_VERSION, ...linkHeader(ex.path, n, page) });
}

/** GET/HEAD of the catalog: the repositories the admitted caller may pull. */
export async function listCatalog(ctx: RegistryContext, ex: Exchange, admitted: Admission): Promise<void> {
  const caller = admitted.caller!;
  const { n, last } = pageParams(ex);
  // Each app decided once per request, only for apps the listing reaches (one read of the app
  // record; membership, team and client read once however many apps share them).
  const pullable = repositoryAccess(ctx.store, caller.principal, 'pull');
  const page = await ctx.registry.catalog(async (r) => (await pullable(r.appId))?.name === appNameOf(r.name), n, last);
  sendJson(ex, 200, { repositories: page.items }, { 'docker-distribution-api-version': API_VERSION, ...linkHeader(ex.path, n, page) });
}

/** The app part of a repository name, or '' for a malformed name (which no app owns). */
function appNameOf(repository: string): string {
  try {
    return parseRepositoryName(repository).app;
  } catch {
    return '';
  }
}
