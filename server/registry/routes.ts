/**
 * The registry router: `/v2/` paths of the distribution spec plus `/token`. Repository names
 * contain a slash, so paths are matched here rather than by the transport's router. The same
 * router serves the registry host (uWS) and the upload host (own HTTP/1.1 listener, server/http/h1-server.ts).
 * Every route declares the action it requires, and the dispatcher admits the request before the
 * handler runs (admission.ts; docs/architecture.md "Registry routing").
 */
import type { Exchange } from '../http/exchange.js';
import { API_VERSION, API_VERSION_HEADER, type RegistryContext } from './context.js';
import { fail, isSlipwayError } from '../../engine/errors.js';
import { REGISTRY_ERRORS } from './error-codes.js';
import { Challenge, challengeHeader } from './access.js';
import { admit, type Admission, type RouteAction } from './admission.js';
import { handleToken } from './token.js';
import { deleteBlob, getBlob } from './blobs.js';
import { cancelUpload, completeUpload, patchUpload, startUpload, uploadStatus } from './uploads.js';
import { deleteManifest, getManifest, listReferrers, putManifest, readManifest } from './manifests.js';
import { listCatalog, listTags } from './listing.js';
import { sendJson } from '../http/respond.js';
import { noteRoute } from '../ops/request-info.js';
import { tryMaybe, type MaybePromise } from '../../engine/maybe-sync.js';


/** Path parameters of a registry route; a part the route's pattern lacks is ''. */
export interface RouteParams {
  /** The repository name, `<app>/<process-type>`. */
  name: string;
  /** A manifest's tag or digest. */
  reference: string;
  /** A blob's digest, or the subject digest of a referrers request (not yet validated). */
  digest: string;
  /** An upload session id. */
  session: string;
}

/**
 * A registry handler: runs after admission, with what admission found (admission.ts). Returns
 * nothing when it answered at once (the hot reads with the embedded store), else a Promise
 * (engine/maybe-sync.ts); errors are thrown or rejected.
 */
export type RegistryHandler = (ctx: RegistryContext, ex: Exchange, admitted: Admission, params: RouteParams, readAhead?: Promise<unknown>) => MaybePromise<void>;

/** The registry's path patterns (`:name` is `<app>/<process-type>` and contains a slash). */
export type RegistryPattern =
  | '/token' | '/v2/' | '/v2/_catalog' | '/v2/:name/tags/list' | '/v2/:name/manifests/:reference'
  | '/v2/:name/blobs/:digest' | '/v2/:name/blobs/uploads/' | '/v2/:name/blobs/uploads/:session'
  | '/v2/:name/referrers/:digest';

/** One endpoint of the registry and upload hosts. */
export interface RegistryRoute {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  pattern: RegistryPattern;
  /** What the caller needs; the dispatcher admits the request (admission.ts `admit`) before the handler runs. */
  action: RouteAction;
  /** An upload-session route: its `_state` capability admits it as well as push credentials. */
  session?: boolean;
  handler: RegistryHandler;
  /**
   * Optional: the read the handler makes first, started beside the admission when the admission
   * waits on the database (a networked store) and the request carries the credentials of an
   * earlier request admitted on the same connection; its Promise is the handler's `readAhead`.
   * Its answer is used only once the request is admitted, so it tells a refused caller nothing
   * (a refusal does not wait for it), and it must not write.
   */
  readAhead?: (ctx: RegistryContext, params: RouteParams) => MaybePromise<unknown>;
}

const versionCheck: RegistryHandler = async (_ctx, ex) => sendJson(ex, 200, {}, API_VERSION_HEADER);

/**
 * Every registry endpoint with the action it requires. The dispatcher below serves only these,
 * admitting each request by its route's action first; a method not listed for a matched pattern
 * is 405 with the pattern's methods in `Allow` (in this order). The authorization matrix test
 * (test/registry/authorization-matrix.test.ts) walks this table; the fuzz test and the metrics'
 * route templates (server/ops/routes.ts) read it too.
 */
export const REGISTRY_ROUTES: readonly RegistryRoute[] = [
  { method: 'GET', pattern: '/token', action: 'token', handler: handleToken },
  { method: 'HEAD', pattern: '/token', action: 'token', handler: handleToken },
  { method: 'GET', pattern: '/v2/', action: 'check', handler: versionCheck },
  { method: 'HEAD', pattern: '/v2/', action: 'check', handler: versionCheck },
  { method: 'GET', pattern: '/v2/_catalog', action: 'catalog', handler: listCatalog },
  { method: 'HEAD', pattern: '/v2/_catalog', action: 'catalog', handler: listCatalog },
  { method: 'GET', pattern: '/v2/:name/tags/list', action: 'pull', handler: listTags },
  { method: 'HEAD', pattern: '/v2/:name/tags/list', action: 'pull', handler: listTags },
  { method: 'GET', pattern: '/v2/:name/manifests/:reference', action: 'pull', handler: getManifest, readAhead: readManifest },
  { method: 'HEAD', pattern: '/v2/:name/manifests/:reference', action: 'pull', handler: getManifest, readAhead: readManifest },
  { method: 'PUT', pattern: '/v2/:name/manifests/:reference', action: 'push', handler: putManifest },
  { method: 'DELETE', pattern: '/v2/:name/manifests/:reference', action: 'delete', handler: deleteManifest },
  { method: 'GET', pattern: '/v2/:name/blobs/:digest', action: 'pull', handler: getBlob },
  { method: 'HEAD', pattern: '/v2/:name/blobs/:digest', action: 'pull', handler: getBlob },
  { method: 'DELETE', pattern: '/v2/:name/blobs/:digest', action: 'delete', handler: deleteBlob },
  { method: 'POST', pattern: '/v2/:name/blobs/uploads/', action: 'push', handler: startUpload },
  { method: 'GET', pattern: '/v2/:name/blobs/uploads/:session', action: 'push', session: true, handler: uploadStatus },
  { method: 'PATCH', pattern: '/v2/:name/blobs/uploads/:session', action: 'push', session: true, handler: patchUpload },
  { method: 'PUT', pattern: '/v2/:name/blobs/uploads/:session', action: 'push', session: true, handler: completeUpload },
  { method: 'DELETE', pattern: '/v2/:name/blobs/uploads/:session', action: 'push', session: true, handler: cancelUpload },
  { method: 'GET', pattern: '/v2/:name/referrers/:digest', action: 'pull', handler: listReferrers },
  { method: 'HEAD', pattern: '/v2/:name/referrers/:digest', action: 'pull', handler: listReferrers },
];

/** What a 405 calls each pattern's resource. */
const RESOURCE_NAMES: Record<RegistryPattern, string> = {
  '/token': '/token',
  '/v2/': '/v2/',
  '/v2/_catalog': 'the catalog',
  '/v2/:name/tags/list': 'tags',
  '/v2/:name/manifests/:reference': 'manifests',
  '/v2/:name/blobs/:digest': 'blobs',
  '/v2/:name/blobs/uploads/': 'blob uploads',
  '/v2/:name/blobs/uploads/:session': 'upload sessions',
  '/v2/:name/referrers/:digest': 'referrers',
};

/** Repository paths; the repository name is greedy, so the last recognised suffix decides. */
const REPOSITORY_PATH = /^\/v2\/(.+)\/(?:(tags\/list)|manifests\/([^/]+)|blobs\/(uploads)\/?([^/]*)|blobs\/([^/]+)|referrers\/([^/]+))$/;

/**
 * The pattern a path matches and its parameters, or undefined when no registry route serves it.
 * `/v2` is `/v2/`; `…/blobs/uploads` (no slash) is the upload-start pattern.
 */
export function matchRegistryPath(path: string): { pattern: RegistryPattern; params: RouteParams } | undefined {
  const params: RouteParams = { name: '', reference: '', digest: '', session: '' };
  if (path === '/token' || path === '/v2/_catalog') return { pattern: path, params };
  if (path === '/v2/' || path === '/v2') return { pattern: '/v2/', params };
  const m = REPOSITORY_PATH.exec(path);
  if (!m) return undefined;
  const [, name, tags, reference, uploads, session, digest, subject] = m as unknown as Array<string | undefined>;
  params.name = name!;
  if (subject !== undefined) {
    params.digest = subject;
    return { pattern: '/v2/:name/referrers/:digest', params };
  }
  if (tags) return { pattern: '/v2/:name/tags/list', params };
  if (reference !== undefined) {
    params.reference = reference;
    return { pattern: '/v2/:name/manifests/:reference', params };
  }
  if (uploads !== undefined) {
    if (!session) return { pattern: '/v2/:name/blobs/uploads/', params };
    params.session = session;
    return { pattern: '/v2/:name/blobs/uploads/:session', params };
  }
  params.digest = digest!;
  return { pattern: '/v2/:name/blobs/:digest', params };
}

/**
 * Handles one registry request, including its errors: synchronously when admission and the
 * handler are (engine/maybe-sync.ts), else the returned Promise settles once answered.
 */
export function handleRegistry(ctx: RegistryContext, ex: Exchange): MaybePromise<void> {
  return tryMaybe(() => dispatch(ctx, ex), (e) => sendRegistryError(ctx, ex, e));
}

/** The routes of each pattern, in REGISTRY_ROUTES order (built once). */
const ROUTES_BY_PATTERN = new Map<RegistryPattern, RegistryRoute[]>();
for (const r of REGISTRY_ROUTES) ROUTES_BY_PATTERN.set(r.pattern, [...(ROUTES_BY_PATTERN.get(r.pattern) ?? []), r]);

/** Route (404 / 405) → admission by the route's action (401 / 403) → handler. */
function dispatch(ctx: RegistryContext, ex: Exchange): MaybePromise<void> {
  const matched = matchRegistryPath(ex.path);
  if (!matched) throw fail('NOT_FOUND', `no registry endpoint at ${ex.path.slice(0, 200)}`);
  const { pattern, params } = matched;
  noteRoute(ex, pattern); // the metrics' route label (server/ops/observe.ts) without a second match
  const candidates = ROUTES_BY_PATTERN.get(pattern) ?? [];
  const route = candidates.find((r) => r.method === ex.method);
  if (!route) throw unsupported(ex.method, RESOURCE_NAMES[pattern], candidates.map((r) => r.method));
  const admitted = admit(ctx, ex, route.action, { repository: params.name, session: route.session ? params.session : undefined });
  if (!(admitted instanceof Promise)) return route.handler(ctx, ex, admitted, params);
  // A networked store: the admission waits on the database (its credentials' check, on the read
  // barrier). The route's read-ahead goes beside it, so a manifest GET whose records the node has
  // not cached costs one round trip, not two; only for credentials this connection was admitted
  // with before, so that made-up credentials cannot make the node read beyond their own check.
  const credentials = ex.header('authorization');
  const ahead = route.readAhead && credentials !== '' && ex.memo?.admitted === credentials ? readAheadOf(route.readAhead, ctx, params) : undefined;
  return admitted.then((a) => {
    if (ex.memo && credentials !== '') ex.memo.admitted = credentials;
    return route.handler(ctx, ex, a, params, ahead);
  });
}

/** `read(ctx, params)` started now, as a Promise marked handled: a refused request never awaits it. */
function readAheadOf(read: NonNullable<RegistryRoute['readAhead']>, ctx: RegistryContext, params: RouteParams): Promise<unknown> {
  const ahead = new Promise<unknown>((resolve) => resolve(read(ctx, params))); // a synchronous throw rejects it
  ahead.catch(() => {});
  return ahead;
}

/** METHOD_NOT_ALLOWED (405 UNSUPPORTED) naming the methods `what` allows (sent as `Allow`, RFC 9110 "405 Method Not Allowed"). */
function unsupported(method: string, what: string, allow: string[]) {
  return fail('METHOD_NOT_ALLOWED', `${method.slice(0, 40)} is not supported on ${what}; allowed: ${allow.join(', ')}`, { allow });
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
  // repository exists) so clients move on to a GET or POST, whose answer carries the message.
  // skopeo and podman start a push with a blob HEAD and showed a bare "400 (Bad Request)".
  if (ex.method === 'HEAD' && (e.code === 'DENIED' || e.code === 'NAME_INVALID')) wire = REGISTRY_ERRORS.NOT_FOUND;
  // docker retries a push step five times over ~50 s unless the error's code is one it treats
  // as final (moby distribution/errors.go retryOnError: UNAUTHORIZED, UNSUPPORTED, DENIED,
  // TOOMANYREQUESTS, NAME_UNKNOWN); NAME_INVALID is not among them. A write to a malformed
  // name is therefore refused as DENIED (403), with the same message naming the rule.
  else if (e.code === 'NAME_INVALID' && ex.method !== 'GET' && ex.method !== 'HEAD') wire = REGISTRY_ERRORS.DENIED;
  const headers: Record<string, string> = { 'docker-distribution-api-version': API_VERSION };
  if (e instanceof Challenge) headers['www-authenticate'] = challengeHeader(ctx, e);
  const allow = (e.detail as { allow?: unknown } | undefined)?.allow;
  if (e.code === 'METHOD_NOT_ALLOWED' && Array.isArray(allow)) headers.allow = allow.join(', ');
  const extra = e.detail as { offset?: number; size?: number } | undefined;
  if (e.code === 'CHUNK_RANGE_MISMATCH' && extra?.offset !== undefined) headers.range = `0-${Math.max(0, extra.offset - 1)}`;
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
