/**
 * Blob upload sessions (distribution spec "Pushing blobs"): POST (with `digest=` for a
 * monolithic upload, `mount=&from=` for a cross-repository mount), PATCH (streamed or with
 * Content-Range), PUT `?digest=`, GET status, DELETE cancel.
 *
 * Session Locations point at the upload host (docs/decisions.md "Large layers") and carry `_state`, an
 * HMAC of the session id, repository and owning node (upload-state.ts): docker sends no
 * credentials to a host it has not logged in to, so the capability authorises the session's own
 * requests. Without it, normal credentials with push access work too (both checked by
 * admission.ts before these handlers run). A session's requests that reach another node than its
 * own get 404 BLOB_UPLOAD_UNKNOWN naming the owner, and change nothing (`session`).
 */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import { authorize, type Caller } from './access.js';
import type { Admission } from './admission.js';
import type { RouteParams } from './routes.js';
import { parseDigest, type Digest } from '../../engine/digest.js';
import { fail, isSlipwayError } from '../../engine/errors.js';
import type { Lease } from '../../engine/blobs/uploads.js';
import { DEFAULT_RECEIVE_RATE, withReceiveRate } from './receive-rate.js';
import type { UploadRecord } from '../../engine/blobs/records.js';
import { API_VERSION } from './context.js';
import { signUploadState, verifyUploadState } from './upload-state.js';
import { otherNodesSession } from '../../engine/blobs/peer-sessions.js';
import { storageFull } from '../../engine/storage/storage-full.js';
import { dataDisk, isStalled } from '../../engine/storage/disk-deadline.js';
import { originOf } from '../notifications/origin.js';

function sessionHeaders(ctx: RegistryContext, rec: UploadRecord): Record<string, string> {
  const state = signUploadState(ctx.keys, rec.id, rec.repository, ctx.uploads.node);
  return {
    'docker-distribution-api-version': API_VERSION,
    location: `${ctx.urls.upload}/v2/${rec.repository}/blobs/uploads/${rec.id}?_state=${state}`,
    range: `0-${Math.max(0, rec.offset - 1)}`,
    'docker-upload-uuid': rec.id,
  };
}

function blobCreated(ctx: RegistryContext, ex: Exchange, repository: string, digest: Digest): void {
  ex.send(201, { 'docker-distribution-api-version': API_VERSION, location: `${ctx.urls.registry}/v2/${repository}/blobs/${digest}`, 'docker-content-digest': digest });
}

/**
 * Streams the request body into a session under `lease`. A body the client breaks off discards
 * the session; one cut off for arriving too slowly keeps what was received (receive-rate.ts).
 * `commitNext`: the same request commits the session next (a PUT or monolithic POST with a body),
 * so its bytes are synced while they stream (Uploads.beginAppend) and the last sync starts beside
 * the session record's commit (Uploads.finishAppend).
 */
async function append(ctx: RegistryContext, ex: Exchange, lease: Lease, rec: UploadRecord, start: number | undefined, commitNext = false): Promise<UploadRecord> {
  const writer = ctx.uploads.beginAppend(rec, start, lease, commitNext);
  let keep: boolean | 'received' = true;
  let cutOff: unknown;
  try {
    await ex.pipeBody(withReceiveRate(writer, ctx.receiveRate ?? DEFAULT_RECEIVE_RATE));
    writer.regionsReturned(); // the whole body was read: no socket can still fill a buffer
  } catch (e) {
    if (ctx.shutdown?.cutting) {
      // Cut by a shutdown, not by the client: the record keeps the last acknowledged offset and
      // the next start truncates the file there (engine Uploads recovery), so the client resumes.
      await writer.end().catch(() => {});
      throw fail('BLOB_UPLOAD_INVALID', 'the server is shutting down; resume this upload from its last acknowledged offset (GET the session for its Range)');
    }
    keep = isSlipwayError(e) && e.code === 'TOO_SLOW' ? 'received' : false;
    cutOff = e;
  }
  const updated = await ctx.uploads.finishAppend(rec, writer, keep, cutOff, commitNext);
  if (keep === 'received') throw fail('TOO_SLOW', (cutOff as Error).message, { offset: updated.offset });
  return updated;
}

/** Runs `op` holding the session's lease (released at the end, whatever happens). */
async function owning<T>(ctx: RegistryContext, rec: UploadRecord, op: string, fn: (lease: Lease) => Promise<T>): Promise<T> {
  const lease = ctx.uploads.claim(rec, op);
  try {
    return await fn(lease);
  } finally {
    ctx.uploads.release(lease);
  }
}

/** POST: opens a session, uploads monolithically (`digest=`) or mounts (`mount=&from=`); admitted for push. */
export async function startUpload(ctx: RegistryContext, ex: Exchange, admitted: Admission, { name: repository }: RouteParams): Promise<void> {
  const caller = admitted.caller!;
  const mount = ex.query.get('mount');
  const from = ex.query.get('from');
  if (mount && from && (await tryMount(ctx, ex, caller, repository, parseDigest(mount), from, admitted.app?.id))) return;
  const digestParam = ex.query.get('digest');
  const digest = digestParam ? parseDigest(digestParam) : undefined;
  const rec = await ctx.uploads.create(repository, caller.principal.accountId, admitted.app?.id);
  if (!digest) return ex.send(202, sessionHeaders(ctx, rec));
  try {
    await owning(ctx, rec, 'PUT', async (lease) => ctx.uploads.commit(await append(ctx, ex, lease, rec, undefined, true), digest, lease));
  } catch (e) {
    // Nobody else knows this session's id: end it (when still open) so it stops counting.
    await ctx.uploads.cancel(rec).catch(() => {});
    // A full or hung disk: nothing was stored and there is no session to resume.
    if (isStalled(e)) throw dataDisk.stalled('a write of the blob');
    throw isSlipwayError(e) && e.code === 'STORAGE_FULL' ? storageFull('the blob') : e;
  }
  blobCreated(ctx, ex, repository, digest);
}

/** Mounts when the caller may pull `from` and `from` has the blob; false means "upload instead". */
async function tryMount(ctx: RegistryContext, ex: Exchange, caller: Caller, repository: string, digest: Digest, from: string, appId?: string): Promise<boolean> {
  try {
    await authorize(ctx, caller, from, 'pull');
  } catch {
    return false;
  }
  if (!(await ctx.registry.mount(from, repository, digest, await originOf(ctx, ex, caller, 'mount'), appId))) return false;
  blobCreated(ctx, ex, repository, digest);
  return true;
}

/**
 * The session a request addresses (admitted by its `_state` or by push credentials).
 * @throws BLOB_UPLOAD_UNKNOWN (404) when this node has no such session; when it is another
 *         node's (named by the `_state`, or else by the session's record: one read on this
 *         path only) the message names that node.
 */
async function session(ctx: RegistryContext, ex: Exchange, { name: repository, session: id }: RouteParams): Promise<UploadRecord> {
  try {
    return ctx.uploads.get(id, repository);
  } catch (e) {
    if (!isSlipwayError(e) || e.code !== 'BLOB_UPLOAD_UNKNOWN') throw e;
    const state = ex.query.get('_state');
    const named = state ? verifyUploadState(ctx.keys, id, repository, state) : undefined;
    const owner = named !== undefined && named !== '' && named !== ctx.uploads.node ? named : await ctx.uploads.peers.ownerOf(id);
    throw owner ? otherNodesSession(id, owner) : e;
  }
}

const CONTENT_RANGE = /^(?:bytes )?(\d+)-(\d+)(?:\/(\d+|\*))?$/;

/** PATCH: appends the body (at Content-Range's start when given). */
export async function patchUpload(ctx: RegistryContext, ex: Exchange, _admitted: Admission, params: RouteParams): Promise<void> {
  const rec = await session(ctx, ex, params);
  const cr = ex.header('content-range');
  let start: number | undefined;
  if (cr) {
    const m = CONTENT_RANGE.exec(cr.trim());
    if (!m || Number(m[2]) < Number(m[1])) throw fail('CHUNK_RANGE_MISMATCH', `invalid Content-Range "${cr.slice(0, 60)}"; expected <start>-<end>`, { offset: rec.offset });
    // An end at or beyond the stated total length cannot be satisfied (distribution spec: 416).
    if (m[3] !== undefined && m[3] !== '*' && Number(m[2]) >= Number(m[3])) {
      throw fail('CHUNK_RANGE_MISMATCH', `Content-Range ${cr.slice(0, 60)} ends beyond its total length ${m[3]}`, { offset: rec.offset });
    }
    start = Number(m[1]);
    const length = ex.header('content-length');
    if (length && Number(length) !== Number(m[2]) - start + 1) {
      throw fail('CHUNK_RANGE_MISMATCH', `Content-Range ${cr} covers ${Number(m[2]) - start + 1} bytes but Content-Length is ${length}`, { offset: rec.offset });
    }
  }
  const updated = await owning(ctx, rec, 'PATCH', (lease) => append(ctx, ex, lease, rec, start));
  ex.send(202, sessionHeaders(ctx, updated));
}

/** PUT `?digest=`: appends any body, then commits the blob under that digest. */
export async function completeUpload(ctx: RegistryContext, ex: Exchange, _admitted: Admission, params: RouteParams): Promise<void> {
  const rec = await session(ctx, ex, params);
  const digestParam = ex.query.get('digest');
  if (!digestParam) throw fail('DIGEST_INVALID', 'the digest query parameter is required to complete an upload');
  const digest = parseDigest(digestParam);
  const hasBody = ex.header('transfer-encoding') !== '' || Number(ex.header('content-length') || '0') > 0;
  // One lease from the body's first byte through the commit: nothing can come in between.
  await owning(ctx, rec, 'PUT', async (lease) => ctx.uploads.commit(hasBody ? await append(ctx, ex, lease, rec, undefined, true) : rec, digest, lease));
  blobCreated(ctx, ex, params.name, digest);
}

/** GET: the session's Range. */
export async function uploadStatus(ctx: RegistryContext, ex: Exchange, _admitted: Admission, params: RouteParams): Promise<void> {
  ex.send(204, sessionHeaders(ctx, await session(ctx, ex, params)));
}

/** DELETE: cancels the session. */
export async function cancelUpload(ctx: RegistryContext, ex: Exchange, _admitted: Admission, params: RouteParams): Promise<void> {
  const rec = await session(ctx, ex, params);
  await owning(ctx, rec, 'DELETE', (lease) => ctx.uploads.cancel(rec, lease));
  ex.send(204, { 'docker-distribution-api-version': API_VERSION });
}
