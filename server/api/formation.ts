/**
 * Formation and container releases (docs/rules.md Endpoints 7; docs/platform-conventions.md 3.3):
 * GET /apps/{app}/formation[/{type}], PATCH /apps/{app}/formation (batch: scale, or with
 * `Accept: …; version=3.container-releases` — also `3.docker-releases`, which existing CLIs send —
 * release images), PATCH/DELETE /apps/{app}/formation/{type}.
 */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { readJson, reply } from './respond.js';
import { visibleApp } from './apps.js';
import { formationJson } from './serialize-platform.js';
import { fail } from '../../engine/errors.js';
import type { ImageUpdate, ScaleUpdate } from '../../engine/platform/releases.js';

/** Accept variants that release container images. */
export const CONTAINER_VARIANTS: ReadonlySet<string> = new Set(['container-releases', 'docker-releases']);

export async function listFormation(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  reply(ctx, call, 200, (await ctx.releases.formation(app.id)).map((f) => formationJson(f, app)));
}

export async function getFormation(ctx: ApiContext, call: ApiCall): Promise<void> {
  const app = await visibleApp(ctx, principalOf(call), call.params.app!);
  const f = await ctx.releases.formationEntry(app.id, call.params.type!);
  reply(ctx, call, 200, formationJson(f, app), { lastModified: f.updatedAt });
}

/** A formation `quantity` field: an integer or a string of digits. @throws INVALID_PARAMS otherwise. */
export function quantityOf(v: unknown, type: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw fail('INVALID_PARAMS', `quantity for ${type} must be an integer`);
  return n;
}

/** A formation `size` field: a size name or `{name}`. @throws INVALID_PARAMS otherwise. */
export function sizeOf(v: unknown, type: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && typeof (v as { name?: unknown }).name === 'string') return (v as { name: string }).name;
  throw fail('INVALID_PARAMS', `size for ${type} must be a dyno size name`);
}

export async function updateFormation(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  const body = await readJson(call.ex);
  if (!Array.isArray(body.updates)) throw fail('INVALID_PARAMS', 'updates must be an array of {type, …} objects');
  const items = body.updates.map((u: unknown, i: number) => {
    if (typeof u !== 'object' || u === null || typeof (u as { type?: unknown }).type !== 'string') throw fail('INVALID_PARAMS', `updates[${i}].type must be a string`);
    return u as Record<string, unknown> & { type: string };
  });
  const releasing = items.some((u) => u.docker_image !== undefined);
  if (releasing) {
    if (!call.variant || !CONTAINER_VARIANTS.has(call.variant)) {
      throw fail('INVALID_PARAMS', `docker_image updates need Accept: application/vnd.${ctx.vendor}+json; version=3.container-releases`);
    }
    const updates: ImageUpdate[] = items.map((u, i) => {
      if (typeof u.docker_image !== 'string') throw fail('INVALID_PARAMS', `updates[${i}].docker_image must be a string of the form sha256:<hex>`);
      return { type: u.type, dockerImage: u.docker_image };
    });
    // Release and scale are one engine call, one transaction: a bad scale item leaves no release.
    const scale: ScaleUpdate[] = items.filter((u) => u.quantity !== undefined || u.size !== undefined)
      .map((u) => ({ type: u.type, quantity: quantityOf(u.quantity, u.type), size: sizeOf(u.size, u.type) }));
    const { formation, app: updated, resolved } = await ctx.releases.release(app, p.accountId, updates, scale, new URL(ctx.urls.registry).host);
    // A manifest digest was released as the image id it names: say so (the platform CLI prints Warning-Message).
    const headers = resolved.length === 0 ? undefined : {
      'warning-message': resolved.map((r) => `docker_image ${r.manifestDigest} (${r.type}) is a manifest digest; released its image id ${r.imageId}`).join('; '),
    };
    return reply(ctx, call, 200, formation.map((f) => formationJson(f, updated)), { headers });
  }
  const updates: ScaleUpdate[] = items.map((u) => ({ type: u.type, quantity: quantityOf(u.quantity, u.type), size: sizeOf(u.size, u.type) }));
  const done = await ctx.releases.scale(app, updates, p.accountId);
  reply(ctx, call, 200, done.map((f) => formationJson(f, app)));
}

export async function updateFormationType(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  const body = await readJson(call.ex);
  // `docker_image: null` removes the process type (the platform CLI's `container:rm`).
  if (body.docker_image === null) {
    const { entry } = await ctx.releases.removeProcessType(app, p.accountId, call.params.type!);
    return reply(ctx, call, 200, formationJson({ ...entry, quantity: 0, image: null }, app));
  }
  const type = (await ctx.releases.formationEntry(app.id, call.params.type!)).type;
  const [f] = await ctx.releases.scale(app, [{ type, quantity: quantityOf(body.quantity, type), size: sizeOf(body.size, type) }], p.accountId);
  reply(ctx, call, 200, formationJson(f!, app));
}

export async function deleteFormationType(ctx: ApiContext, call: ApiCall): Promise<void> {
  const p = principalOf(call);
  const app = await visibleApp(ctx, p, call.params.app!);
  reply(ctx, call, 200, formationJson(await ctx.releases.removeFormation(app, call.params.type!, p.accountId), app));
}
