/**
 * The registry router: `/v2/` paths of the distribution spec plus `/token`. Repository names
 * contain a slash, so paths are matched here rather than by the transport's router. The same
 * router serves the registry host (uWS) and the upload host (own HTTP/1.1 listener, server/http/h1-server.ts).
 */
import type { Exchange } from '../http/exchange.js';
import { API_VERSION_HEADER, type RegistryContext } from './context.js';
import { fail, isSlipwayError } from '../../engine/errors.js';
import { REGISTRY_ERRORS } from './error-codes.js';
import { authenticate, Challenge, challengeHeader } from './access.js';
import { handleToken } from './token.js';
import { deleteBlob, getBlob } from './blobs.js';
import { cancelUpload, completeUpload, patchUpload, startUpload, uploadStatus } from './uploads.js';
import { deleteManifest, getManifest, listReferrers, putManifest } from './manifests.js';
import { listCatalog, listTags } from './listing.js';
import { sendJson } from '../http/respond.js';


/**
 * The registry's endpoints as method and pattern (`:name` is `<app>/<process-type>`), for
 * documentation and the fuzz test; `route` below is the matcher.
 */
export const REGISTRY_ROUTES: ReadonlyArray<{ method: string; pattern: string }> = [
  { method: 'GET', pattern: '/token' },
  { method: 'GET', pattern: '/v2/' },
  { method: 'GET', pattern: '/v2/_catalog' },
  { method: 'GET', pattern: '/v2/:name/tags/list' },
  { method: 'GET', pattern: '/v2/:name/manifests/:reference' },
  { method: 'PUT', pattern: '/v2/:name/manifests/:reference' },
  { method: 'DELETE', pattern: '/v2/:name/manifests/:reference' },
  { method: 'GET', pattern: '/v2/:name/blobs/:digest' },
  { method: 'DELETE', pattern: '/v2/:name/blobs/:digest' },
  { method: 'POST', pattern: '/v2/:name/blobs/uploads/' },
  { method: 'GET', pattern: '/v2/:name/blobs/uploads/:uuid' },
  { method: 'PATCH', pattern: '/v2/:name/blobs/uploads/:uuid' },
  { method: 'PUT', pattern: '/v2/:name/blobs/uploads/:uuid' },
  { method: 'DELETE', pattern: '/v2/:name/blobs/uploads/:uuid' },
  { method: 'GET', pattern: '/v2/:name/referrers/:digest' },
];

/** Registry endpoint paths; also names the access log's and metrics' route templates (server/ops/routes.ts). */
export const ROUTE = /^\/v2\/(.+)\/(?:(tags\/list)|manifests\/([^/]+)|blobs\/(uploads)\/?([^/]*)|blobs\/([^/]+)|referrers\/([^/]+))$/;

/** Handles one registry request, including its errors. */
export async function handleRegistry(ctx: RegistryContext, ex: Exchange): Promise<void> {
  try {
    await route(ctx, ex);
  } catch (e) {
    sendRegistryError(ctx, ex, e);
  }
}

async function route(ctx: RegistryContext, ex: Exchange): Promise<void> {
  const { method, path } = ex;
  if (path === '/token') {
    if (method !== 'GET' && method !== 'HEAD') throw unsupported(method, '/token', ['GET', 'HEAD']);
    return handleToken(ctx, ex);
  }
  if (path === '/v2/' || path === '/v2') {
    if (method !== 'GET' && method !== 'HEAD') throw unsupported(method, '/v2/', ['GET', 'HEAD']);
    if (!await authenticate(ctx, ex)) throw new Challenge('authentication required', undefined);
    return sendJson(ex, 200, {}, API_VERSION_HEADER);
  }
  if (path === '/v2/_catalog') {
    if (method !== 'GET' && method !== 'HEAD') throw unsupported(method, 'the catalog', ['GET', 'HEAD']);
    return listCatalog(ctx, ex);
  }
  const m = ROUTE.exec(path);
  if (!m) throw fail('NOT_FOUND', `no registry endpoint at ${path.slice(0, 200)}`);
  const [, name, tags, reference, uploads, uploadId, digest, subject] = m as unknown as Array<string | undefined>;
  const repository = name!;
  if (subject !== undefined) {
    if (method !== 'GET' && method !== 'HEAD') throw unsupported(method, 'referrers', ['GET', 'HEAD']);
    return listReferrers(ctx, ex, repository, subject);
  }
  if (tags) {
    if (method !== 'GET' && method !== 'HEAD') throw unsupported(method, 'tags', ['GET', 'HEAD']);
    return listTags(ctx, ex, repository);
  }
  if (reference !== undefined) {
    switch (method) {
      case 'GET': case 'HEAD': return getManifest(ctx, ex, repository, reference);
      case 'PUT': return putManifest(ctx, ex, repository, reference);
      case 'DELETE': return deleteManifest(ctx, ex, repository, reference);
      default: throw unsupported(method, 'manifests', ['GET', 'HEAD', 'PUT', 'DELETE']);
    }
  }
  if (uploads !== undefined) {
    if (!uploadId) {
      if (method !== 'POST') throw unsupported(method, 'blob uploads', ['POST']);
      return startUpload(ctx, ex, repository);
    }
    switch (method) {
      case 'PATCH': return patchUpload(ctx, ex, repository, uploadId);
      case 'PUT': return completeUpload(ctx, ex, repository, uploadId);
      case 'GET': return uploadStatus(ctx, ex, repository, uploadId);
      case 'DELETE': return cancelUpload(ctx, ex, repository, uploadId);
      default: throw unsupported(method, 'upload sessions', ['GET', 'PATCH', 'PUT', 'DELETE']);
    }
  }
  switch (method) {
    case 'GET': case 'HEAD': return getBlob(ctx, ex, repository, digest!);
    case 'DELETE': return deleteBlob(ctx, ex, repository, digest!);
    default: throw unsupported(method, 'blobs', ['GET', 'HEAD', 'DELETE']);
  }
}

/** 405 UNSUPPORTED naming the methods `what` allows (sent as `Allow`, RFC 9110 "405 Method Not Allowed"). */
function unsupported(method: string, what: string, allow: string[]) {
  return fail('UNSUPPORTED', `${method.slice(0, 40)} is not supported on ${what}; allowed: ${allow.join(', ')}`, { allow });
}

/** Writes the distribution error envelope for `e`; unknown errors are logged and hidden. */
export function sendRegistryError(ctx: RegistryContext, ex: Exchange, e: unknown): void {
  if (ex.responded || ex.aborted) return;
  if (!isSlipwayError(e)) {
    ctx.log.error({ err: e, reqId: ex.id, path: ex.path }, 'registry request failed');
    return sendJson(ex, 500, { errors: [{ code: 'UNKNOWN', message: 'internal error; see the server log', detail: { requestId: ex.id } }] }, API_VERSION_HEADER);
  }
  let wire = REGISTRY_ERRORS[e.code];
  // A HEAD refusal has no body to explain itself; answer "not found" (hiding whether the
  // repository exists) so clients move on to a GET or POST, whose 403 carries the message.
  if (ex.method === 'HEAD' && e.code === 'DENIED') wire = REGISTRY_ERRORS.NOT_FOUND;
  const headers: Record<string, string> = { ...API_VERSION_HEADER };
  if (e instanceof Challenge) headers['www-authenticate'] = challengeHeader(ctx, e);
  const allow = (e.detail as { allow?: unknown } | undefined)?.allow;
  if (e.code === 'UNSUPPORTED' && Array.isArray(allow)) headers.allow = allow.join(', ');
  const extra = e.detail as { offset?: number; size?: number } | undefined;
  if (e.code === 'RANGE_INVALID' && extra?.offset !== undefined) headers.range = `0-${Math.max(0, extra.offset - 1)}`;
  if (e.code === 'RANGE_NOT_SATISFIABLE' && extra?.size !== undefined) headers['content-range'] = `bytes */${extra.size}`;
  const retryAfter = (e.detail as { retryAfter?: number } | undefined)?.retryAfter;
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  if (e.code === 'TOO_SLOW') {
    // A body cut off for its rate: the Range kept, then close (the rest is not worth reading;
    // the upload host honours this header, uWS ends such a body by its own timeout).
    if (extra?.offset !== undefined) headers.range = `0-${Math.max(0, extra.offset - 1)}`;
    headers.connection = 'close';
  }
  sendJson(ex, wire.status, { errors: [{ code: wire.code, message: e.message, detail: e.detail ?? null }] }, headers);
}
