/**
 * An app's registry in the dashboard (docs/user-guide.md "Registry view and releases"): its
 * repositories `<app>/<process-type>`, their images with tags, digests, sizes, push times,
 * layers and inspection warnings, the commands to push and pull, and deletes of a tag or an
 * image by the same engine call (`Registry.deleteManifest`) and access rule (`authorize`, the
 * registry's `delete` action) as the registry API's `DELETE /v2/<name>/manifests/<reference>`:
 *   GET  /apps/:app/registry                                 repositories, images, commands
 *   GET  /apps/:app/registry/:type/images/:digest            one image: tags, layers, warnings, releases
 *   POST /apps/:app/registry/:type/tags/:tag/delete          delete a tag (a confirmation page first)
 *   POST /apps/:app/registry/:type/images/:digest/delete     delete an image and its tags (the same)
 * Reading needs what a pull needs (role on the app, a scope allowing `apps:read`); the delete
 * buttons show only to callers the registry would let delete. A delete always shows its
 * confirmation page (with or without JavaScript): what goes at once, what GC frees later.
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import type { AppRecord, ReleaseRecord } from '../../../engine/platform/records.js';
import type { Principal } from '../../../engine/identity/authorizations.js';
import { fail } from '../../../engine/errors.js';
import { visibleApp } from '../../api/apps.js';
import { authorize } from '../../registry/access.js';
import { mayUseRepository } from '../../../engine/platform/access.js';
import { usesContainerRegistry } from '../../../engine/platform/runtime-rules.js';
import { imageOfRepository, imagesOfRepository, repositoriesOfApp, type ImageView } from '../../../engine/registry/browse.js';
import { bytes } from '../../ops/units.js';
import { isTag } from '../../../engine/registry/names.js';
import { pushCommands, pullCommands, registryHost } from './registry-commands.js';
import { deleteExplanation } from './registry-gc.js';
import { appPlace, done, mirror, noticeOf, sendDashboard, signedInPage, submitted, when, type Place, type Signed, type Submitted } from './page.js';

/** The dashboard path of an image page. */
export function imagePath(app: string, repository: string, digest: string): string {
  return `/apps/${app}/registry/${repository.slice(app.length + 1)}/images/${encodeURIComponent(digest)}`;
}

/** An app the person may browse the registry of. @throws NOT_FOUND (as GET /apps/:app), DENIED without pull rights */
async function browsableApp(ctx: AuthContext, s: Signed): Promise<AppRecord> {
  mirror(s, 'GET /apps/:app');
  const app = await visibleApp(ctx, s.principal, s.params.app!);
  if (!await mayUseRepository(ctx.store, s.principal, app, 'pull')) throw fail('DENIED', `Your access does not allow reading the images of ${app.name}.`);
  return app;
}

function mayDelete(ctx: AuthContext, p: Principal, app: AppRecord): Promise<boolean> {
  return Promise.resolve(mayUseRepository(ctx.store, p, app, 'delete'));
}

/** An image as a table row or page shows it. */
function imageRow(app: AppRecord, i: ImageView) {
  const warnings = i.info.warnings;
  return {
    digest: i.digest, short: i.digest.slice(0, 19), imageId: i.configDigest, href: imagePath(app.name, i.repository, i.digest),
    tags: i.tags.map((t) => ({ tag: t.tag, updated: when(t.updatedAt) })), size: bytes(i.size), bytes: i.size, pushed: when(i.pushedAt),
    warnings, platform: `${i.info.os}/${i.info.architecture}`, layerCount: i.layers.length,
  };
}

/** GET /apps/:app/registry. @throws NOT_FOUND for an app the person cannot see; DENIED without pull rights */
export async function showRegistry(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (!s) return;
  const app = await browsableApp(ctx, s);
  const reader = ctx.store.metadata;
  const listed = await repositoriesOfApp(reader, app.name);
  const host = registryHost(ctx);
  const repositories = await Promise.all(listed.repositories.map(async (r) => {
    const { images, truncated } = await imagesOfRepository(reader, r.name);
    return { name: r.name, type: r.processType, images: images.map((i) => imageRow(app, i)), truncated, count: r.images, lastPush: when(r.lastPushAt), pull: pullCommands(host, app.name, r.processType) };
  }));
  sendDashboard(ctx, s, 200, 'registry', 'apps', {
    title: `Registry of ${app.name}`, notice: noticeOf(s.ex), app: { name: app.name }, host, repositories, truncated: listed.truncated,
    push: usesContainerRegistry(app) ? pushCommands(host, app.name, repositories[0]?.type ?? 'web') : null, generation: app.generation, canDelete: await mayDelete(ctx, s.principal, app),
  }, appPlace(app.name, 'registry'));
}

/** Releases of `app` naming image `repository@digest`, newest first, as `v<N>` with whether it is the current one. */
function releasesOf(all: ReleaseRecord[], app: AppRecord, repository: string, digest: string) {
  return all.filter((r) => Object.values(r.images).some((i) => i.repository === repository && i.manifestDigest === digest))
    .reverse().map((r) => ({ version: r.version, current: r.version === (app.releaseVersion ?? 0), types: Object.entries(r.images).filter(([, i]) => i.manifestDigest === digest).map(([t]) => t) }));
}

/** The image a route names. @throws MANIFEST_UNKNOWN (404) when the repository does not hold it */
async function namedImage(ctx: AuthContext, app: AppRecord, params: Record<string, string>): Promise<ImageView> {
  const repository = `${app.name}/${params.type}`;
  const image = await imageOfRepository(ctx.store.metadata, repository, params.digest!);
  if (!image) throw fail('MANIFEST_UNKNOWN', `${repository} holds no image ${params.digest!.slice(0, 80)}.`);
  return image;
}

/** GET /apps/:app/registry/:type/images/:digest. @throws NOT_FOUND, DENIED as showRegistry; MANIFEST_UNKNOWN (404) for an image the repository does not hold */
export async function showImage(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (!s) return;
  const app = await browsableApp(ctx, s);
  const image = await namedImage(ctx, app, params);
  const host = registryHost(ctx);
  const unscanned = new Map((image.info.unscannedLayers ?? []).map((l) => [l.digest, l.reason]));
  sendDashboard(ctx, s, 200, 'image', 'apps', {
    title: `Image ${image.digest.slice(0, 19)} of ${image.repository}`, notice: noticeOf(s.ex), app: { name: app.name },
    repository: image.repository, type: params.type, image: imageRow(app, image),
    config: { digest: image.config.digest, size: bytes(image.config.size), mediaType: image.config.mediaType },
    layers: image.layers.map((l, n) => ({ n: n + 1, digest: l.digest, size: bytes(l.size), mediaType: l.mediaType, unscanned: unscanned.get(l.digest) ?? '' })),
    facts: { entrypoint: image.info.entrypoint?.join(' ') ?? '', cmd: image.info.cmd?.join(' ') ?? '', workingDir: image.info.workingDir || '/', user: image.info.user || 'root' },
    pull: pullCommands(host, app.name, params.type!, image.tags[0]?.tag, image.digest),
    releases: releasesOf(await ctx.releases.list(app.id), app, image.repository, image.digest),
    canDelete: await mayDelete(ctx, s.principal, app),
  }, imagePlace(app, image));
}

/** Apps › app › Registry › image, under the app's Registry tab. */
function imagePlace(app: AppRecord, image: ImageView): Place {
  const place = appPlace(app.name, 'registry');
  place.crumbs![place.crumbs!.length - 1] = { text: 'Registry', href: `/apps/${app.name}/registry` };
  place.crumbs!.push({ text: `${image.repository.slice(app.name.length + 1)}@${image.digest.slice(0, 19)}` });
  return place;
}

/**
 * The checks of a delete, in the registry API's order: the form (CSRF, session), then the
 * registry's `delete` rule on the repository (`authorize`: DENIED for another account's app or
 * a scope without write), then the app's visibility for the page.
 */
async function deleting(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<{ s: Submitted; app: AppRecord; repository: string }> {
  const s = await submitted(ctx, ex, params);
  const repository = `${params.app}/${params.type}`;
  await authorize(ctx, { principal: s.principal }, repository, 'delete');
  return { s, app: await visibleApp(ctx, s.principal, params.app!), repository };
}

/**
 * POST /apps/:app/registry/:type/tags/:tag/delete: the confirmation page, then (with confirmed=yes) the registry's DELETE by tag.
 * @throws DENIED (bad CSRF token, or the registry's delete rule); MANIFEST_INVALID for a reference that is not a tag; MANIFEST_UNKNOWN
 */
export async function submitDeleteTag(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const { s, app, repository } = await deleting(ctx, ex, params);
  const tag = params.tag!;
  if (!isTag(tag)) throw fail('MANIFEST_INVALID', `"${tag.slice(0, 80)}" is not a tag.`);
  const digest = await ctx.registry.resolveManifest(repository, tag);
  if (!s.confirmed) {
    const image = await namedImage(ctx, app, { ...params, digest });
    return await confirmDelete(ctx, s, app, image, tag);
  }
  await ctx.registry.deleteManifest(repository, tag);
  done(s, `/apps/${app.name}/registry`, 'tag-deleted');
}

/**
 * POST /apps/:app/registry/:type/images/:digest/delete: the confirmation page, then the registry's DELETE by digest (the image and its tags).
 * @throws DENIED (bad CSRF token, or the registry's delete rule); MANIFEST_UNKNOWN
 */
export async function submitDeleteImage(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const { s, app, repository } = await deleting(ctx, ex, params);
  const image = await namedImage(ctx, app, params);
  if (!s.confirmed) return await confirmDelete(ctx, s, app, image, null);
  await ctx.registry.deleteManifest(repository, image.digest);
  done(s, `/apps/${app.name}/registry`, 'image-deleted');
}

/** The confirmation page of a delete: what goes now, what stays, and when GC frees the bytes. */
async function confirmDelete(ctx: AuthContext, s: Submitted, app: AppRecord, image: ImageView, tag: string | null): Promise<void> {
  const releases = releasesOf(await ctx.releases.list(app.id), app, image.repository, image.digest);
  const explained = await deleteExplanation(ctx, image, tag, releases);
  sendDashboard(ctx, s, 200, 'registry-delete', 'apps', {
    title: tag ? `Delete tag ${image.repository}:${tag}` : `Delete image ${image.digest.slice(0, 19)}`,
    action: s.ex.path, back: imagePath(app.name, image.repository, image.digest), tag, repository: image.repository, image: imageRow(app, image),
    releases, ...explained,
  }, imagePlace(app, image));
}
