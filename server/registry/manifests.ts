/** Manifest PUT/GET/HEAD/DELETE by tag or digest (distribution spec "Pushing/Pulling manifests"). */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import type { Admission } from './admission.js';
import type { RouteParams } from './routes.js';
import { fail } from '../../engine/errors.js';
import { MAX_MANIFEST_BYTES } from '../../engine/registry/registry.js';
import { API_VERSION } from './context.js';
import { parseDigest } from '../../engine/digest.js';
import { sendJson } from '../http/respond.js';
import { andThen, tryMaybe, type MaybePromise } from '../../engine/maybe-sync.js';
import { notePull, originOf } from '../notifications/origin.js';

/** PUT of a manifest by tag or digest (admitted for push: `admitted.app` owns the repository). */
export async function putManifest(ctx: RegistryContext, ex: Exchange, admitted: Admission, { name: repository, reference }: RouteParams): Promise<void> {
  const app = admitted.app!;
  let body: Buffer;
  try {
    body = await ex.body(MAX_MANIFEST_BYTES);
  } catch (e) {
    if ((e as { code?: string }).code === 'BODY_TOO_LARGE') throw fail('MANIFEST_TOO_LARGE', `manifest exceeds the ${MAX_MANIFEST_BYTES}-byte (4 MiB) limit`);
    throw e;
  }
  const origin = await originOf(ctx, ex, admitted.caller, 'push');
  const digest = await ctx.registry.putManifest(repository, app.id, reference, body, ex.header('content-type'), admitted.caller?.principal.accountId, origin);
  ex.send(201, { 'docker-distribution-api-version': API_VERSION, location: `${ctx.urls.registry}/v2/${repository}/manifests/${digest}`, 'docker-content-digest': digest });
}

/**
 * GET/HEAD of a manifest. A reference that is neither a tag nor a digest names nothing, so it is
 * 404 MANIFEST_UNKNOWN (the distribution spec's conformance suite expects that for GET/HEAD; a PUT
 * to such a reference stays 400 MANIFEST_INVALID). A malformed digest stays 400 DIGEST_INVALID.
 * Answers synchronously when the store reads synchronously (engine/maybe-sync.ts).
 */
export function getManifest(ctx: RegistryContext, ex: Exchange, admitted: Admission, params: RouteParams, readAhead?: Promise<unknown>): MaybePromise<void> {
  const { name: repository, reference } = params;
  const content = tryMaybe(() => (readAhead as ReturnType<typeof readManifest> | undefined) ?? readManifest(ctx, params), (e) => {
    if ((e as { code?: string }).code !== 'MANIFEST_INVALID') throw e;
    throw fail('MANIFEST_UNKNOWN', `manifest unknown: ${(e as Error).message}`, { name: repository, reference: reference.slice(0, 200) });
  });
  return andThen(content, ({ digest, mediaType, bytes }) => {
    const headers = {
      'docker-distribution-api-version': API_VERSION,
      'content-type': mediaType,
      'docker-content-digest': digest,
      etag: `"${digest}"`,
    };
    const inm = ex.header('if-none-match');
    if (inm && (inm === `"${digest}"` || inm === digest)) return ex.send(304, headers);
    if (ctx.notifications) notePull(ctx, ex, admitted.caller, repository, reference, digest, mediaType, bytes.length);
    ex.send(200, headers, bytes, bytes.length);
  });
}

/**
 * The manifest a GET or HEAD of `name`/`reference` answers with (its digest, media type and
 * bytes): what `getManifest` reads, and the route's read-ahead (routes.ts `readAhead`).
 * @throws MANIFEST_UNKNOWN; MANIFEST_INVALID for a reference that is neither tag nor digest
 *         (getManifest answers it as MANIFEST_UNKNOWN); synchronously on the embedded store.
 */
export function readManifest(ctx: RegistryContext, { name: repository, reference }: RouteParams) {
  return ctx.registry.manifestContent(repository, reference);
}

/** The OCI image index media type of a referrers response (OCI distribution spec 1.1 "Listing Referrers"). */
export const IMAGE_INDEX_MEDIA_TYPE = 'application/vnd.oci.image.index.v1+json';

/**
 * GET /v2/<name>/referrers/<digest> (OCI distribution spec 1.1): the manifests whose `subject`
 * is `digest`. Slipway stores only Docker v2 schema 2 manifests, which have no subject, so the
 * answer is always an empty image index (200, not 404, so clients know the API exists). Access
 * is that of a pull (admitted by the dispatcher); the digest must be well formed. An `artifactType` filter is trivially
 * applied to the empty list and reported in `OCI-Filters-Applied`.
 * @throws DENIED/UNAUTHORIZED as a pull would; DIGEST_INVALID for a malformed digest.
 */
export async function listReferrers(ctx: RegistryContext, ex: Exchange, _admitted: Admission, { digest }: RouteParams): Promise<void> {
  parseDigest(digest);
  const headers: Record<string, string> = { 'docker-distribution-api-version': API_VERSION };
  if (ex.query.has('artifactType')) headers['oci-filters-applied'] = 'artifactType';
  sendJson(ex, 200, { schemaVersion: 2, mediaType: IMAGE_INDEX_MEDIA_TYPE, manifests: [] }, { ...headers, 'content-type': IMAGE_INDEX_MEDIA_TYPE });
}

/** DELETE of a manifest by tag or digest (admitted for delete). */
export async function deleteManifest(ctx: RegistryContext, ex: Exchange, admitted: Admission, { name: repository, reference }: RouteParams): Promise<void> {
  await ctx.registry.deleteManifest(repository, reference, admitted.caller?.principal.accountId ?? null, await originOf(ctx, ex, admitted.caller, 'delete'));
  ex.send(202, { 'docker-distribution-api-version': API_VERSION });
}
