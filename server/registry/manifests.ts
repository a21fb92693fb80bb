/** Manifest PUT/GET/HEAD/DELETE by tag or digest (distribution spec "Pushing/Pulling manifests"). */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import { authenticate, authorize } from './auth.js';
import { fail } from '../../engine/errors.js';
import { MAX_MANIFEST_BYTES } from '../../engine/registry/registry.js';
import { API_VERSION_HEADER } from './context.js';

export async function putManifest(ctx: RegistryContext, ex: Exchange, repository: string, reference: string): Promise<void> {
  const app = authorize(ctx, authenticate(ctx, ex), repository, 'push');
  let body: Buffer;
  try {
    body = await ex.body(MAX_MANIFEST_BYTES);
  } catch (e) {
    if ((e as { code?: string }).code === 'BODY_TOO_LARGE') throw fail('MANIFEST_TOO_LARGE', `manifest exceeds the ${MAX_MANIFEST_BYTES}-byte (4 MiB) limit`);
    throw e;
  }
  const digest = await ctx.registry.putManifest(repository, app.id, reference, body, ex.header('content-type'));
  ex.send(201, { ...API_VERSION_HEADER, location: `${ctx.urls.registry}/v2/${repository}/manifests/${digest}`, 'docker-content-digest': digest });
}

export async function getManifest(ctx: RegistryContext, ex: Exchange, repository: string, reference: string): Promise<void> {
  authorize(ctx, authenticate(ctx, ex), repository, 'pull');
  const { digest, mediaType, bytes } = ctx.registry.manifestContent(repository, reference);
  const headers = {
    ...API_VERSION_HEADER,
    'content-type': mediaType,
    'docker-content-digest': digest,
    etag: `"${digest}"`,
  };
  const inm = ex.header('if-none-match');
  if (inm && (inm === `"${digest}"` || inm === digest)) return ex.send(304, headers);
  ex.send(200, headers, bytes, bytes.length);
}

export async function deleteManifest(ctx: RegistryContext, ex: Exchange, repository: string, reference: string): Promise<void> {
  authorize(ctx, authenticate(ctx, ex), repository, 'delete');
  await ctx.registry.deleteManifest(repository, reference);
  ex.send(202, { ...API_VERSION_HEADER });
}
