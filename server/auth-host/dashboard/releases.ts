/**
 * An app's releases in the dashboard (docs/platform-conventions.md 3.4; docs/user-guide.md
 * "Registry view and releases"): for each release, the image each process type runs, the
 * `repository:tag` it came from (recorded at release time; releases made before the tag was
 * recorded show the repository and digest, and the tags naming that image now), the warnings
 * recorded for it, and a roll back button (POST /apps/:app/rollback, apps.ts: the engine's
 * `Releases.rollback` under the access rule of POST /apps/{app}/releases).
 *   GET /apps/:app/releases      the newest MAX_RELEASES releases, newest first
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import type { ReleaseImage } from '../../../engine/platform/records.js';
import { visibleApp } from '../../api/apps.js';
import { holdsManifest } from '../../../engine/registry/registry.js';
import { tagsOfManifest } from '../../../engine/registry/tags.js';
import type { Digest } from '../../../engine/digest.js';
import { allowed, appPlace, mirror, noticeOf, sendDashboard, signedInPage, when } from './page.js';
import { imagePath } from './registry.js';

/** Releases shown on the page (newest first); the API lists them all. */
export const MAX_RELEASES = 100;

/** GET /apps/:app/releases. @throws NOT_FOUND for an app the person cannot see (as GET /apps/{app}/releases) */
export async function showReleases(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (!s) return;
  mirror(s, 'GET /apps/:app/releases');
  const app = await visibleApp(ctx, s.principal, params.app!);
  const all = await ctx.releases.list(app.id);
  const shown = all.slice(-MAX_RELEASES).reverse();
  // One look-up per distinct image: still stored (a link to its page), and its tags now.
  const stored = new Map<string, Promise<{ held: boolean; tags: string[] }>>();
  const storedOf = (i: ReleaseImage) => {
    const k = `${i.repository}@${i.manifestDigest}`;
    let v = stored.get(k);
    if (!v) {
      v = (async () => {
        const held = await holdsManifest(ctx.store.metadata, i.repository, i.manifestDigest as Digest);
        return { held, tags: held ? await tagsOfManifest(ctx.store.metadata, i.repository, i.manifestDigest as Digest) : [] };
      })();
      stored.set(k, v);
    }
    return v;
  };
  const current = app.releaseVersion ?? 0;
  const releases = await Promise.all(shown.map(async (r) => ({
    version: r.version, description: r.description, current: r.version === current, who: (await ctx.accounts.get(r.userId))?.email ?? r.userId,
    created: when(r.createdAt), rollbackOf: r.rollbackOf,
    images: await Promise.all(Object.entries(r.images).map(async ([type, i]) => {
      const now = await storedOf(i);
      return {
        type, imageId: i.configDigest, short: i.configDigest.slice(0, 19), repository: i.repository, digest: i.manifestDigest,
        recorded: i.tags !== undefined, tags: i.tags ?? [], tagsNow: now.tags, stored: now.held,
        href: now.held ? imagePath(app.name, i.repository, i.manifestDigest) : '', command: i.command, warnings: i.warnings,
      };
    })),
  })));
  sendDashboard(ctx, s, 200, 'releases', 'apps', {
    title: `Releases of ${app.name}`, notice: noticeOf(s.ex), app: { name: app.name }, releases, total: all.length, truncated: all.length > shown.length,
    canRollback: allowed(s, 'POST /apps/:app/releases'),
  }, appPlace(app.name, 'releases'));
}
