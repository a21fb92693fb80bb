/**
 * Blob upload sessions (distribution spec "Pushing blobs"): POST (with `digest=` for a
 * monolithic upload, `mount=&from=` for a cross-repository mount), PATCH (streamed or with
 * Content-Range), PUT `?digest=`, GET status, DELETE cancel.
 *
 * Session Locations point at the upload host (README "Large layers") and carry `_state`, an
 * HMAC of the session id and repository: docker sends no credentials to a host it has not
 * logged in to, so the capability authorises the session's own requests. Without it, normal
 * credentials with push access work too.
 */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import { authenticate, authorize, type Caller } from './auth.js';
import { parseDigest, type Digest } from '../../engine/digest.js';
import { fail } from '../../engine/errors.js';
import type { UploadRecord } from '../../engine/blobs/records.js';
import { API_VERSION_HEADER } from './context.js';

function sessionHeaders(ctx: RegistryContext, rec: UploadRecord): Record<string, string> {
  const state = ctx.keys.sign('upload-state', `${rec.id}:${rec.repository}`);
  return {
    ...API_VERSION_HEADER,
    location: `${ctx.urls.upload}/v2/${rec.repository}/blobs/uploads/${rec.id}?_state=${state}`,
    range: `0-${Math.max(0, rec.offset - 1)}`,
    'docker-upload-uuid': rec.id,
  };
}

function blobCreated(ctx: RegistryContext, ex: Exchange, repository: string, digest: Digest): void {
  ex.send(201, { ...API_VERSION_HEADER, location: `${ctx.urls.registry}/v2/${repository}/blobs/${digest}`, 'docker-content-digest': digest });
}

/** Streams the request body into a session; the session is discarded if the body breaks off. */
async function append(ctx: RegistryContext, ex: Exchange, rec: UploadRecord, start: number | undefined): Promise<UploadRecord> {
  const writer = ctx.uploads.beginAppend(rec, start);
  let ok = true;
  try {
    await ex.pipeBody(writer);
  } catch {
    ok = false;
  }
  if (!ok && ctx.shutdown?.cutting) {
    // Cut by a shutdown, not by the client: the record keeps the last acknowledged offset and
    // the next start truncates the file there (engine Uploads recovery), so the client resumes.
    await writer.end().catch(() => {});
    throw fail('BLOB_UPLOAD_INVALID', 'the server is shutting down; resume this upload from its last acknowledged offset (GET the session for its Range)');
  }
  return ctx.uploads.finishAppend(rec, writer, ok);
}

export async function startUpload(ctx: RegistryContext, ex: Exchange, repository: string): Promise<void> {
  const caller = authenticate(ctx, ex);
  authorize(ctx, caller, repository, 'push');
  const mount = ex.query.get('mount');
  const from = ex.query.get('from');
  if (mount && from && (await tryMount(ctx, ex, caller!, repository, parseDigest(mount), from))) return;
  const digestParam = ex.query.get('digest');
  const digest = digestParam ? parseDigest(digestParam) : undefined;
  let rec = await ctx.uploads.create(repository, caller!.principal.accountId);
  if (!digest) return ex.send(202, sessionHeaders(ctx, rec));
  rec = await append(ctx, ex, rec, undefined);
  await ctx.uploads.commit(rec, digest);
  blobCreated(ctx, ex, repository, digest);
}

/** Mounts when the caller may pull `from` and `from` has the blob; false means "upload instead". */
async function tryMount(ctx: RegistryContext, ex: Exchange, caller: Caller, repository: string, digest: Digest, from: string): Promise<boolean> {
  try {
    authorize(ctx, caller, from, 'pull');
  } catch {
    return false;
  }
  if (!(await ctx.registry.mount(from, repository, digest))) return false;
  blobCreated(ctx, ex, repository, digest);
  return true;
}

/** The session a request addresses, authorised by `_state` or by push credentials. */
function session(ctx: RegistryContext, ex: Exchange, repository: string, id: string): UploadRecord {
  const state = ex.query.get('_state');
  if (!(state && ctx.keys.verify('upload-state', `${id}:${repository}`, state))) {
    authorize(ctx, authenticate(ctx, ex), repository, 'push');
  }
  return ctx.uploads.get(id, repository);
}

const CONTENT_RANGE = /^(?:bytes )?(\d+)-(\d+)(?:\/(?:\d+|\*))?$/;

export async function patchUpload(ctx: RegistryContext, ex: Exchange, repository: string, id: string): Promise<void> {
  const rec = session(ctx, ex, repository, id);
  const cr = ex.header('content-range');
  let start: number | undefined;
  if (cr) {
    const m = CONTENT_RANGE.exec(cr.trim());
    if (!m || Number(m[2]) < Number(m[1])) throw fail('RANGE_INVALID', `invalid Content-Range "${cr.slice(0, 60)}"; expected <start>-<end>`, { offset: rec.offset });
    start = Number(m[1]);
    const length = ex.header('content-length');
    if (length && Number(length) !== Number(m[2]) - start + 1) {
      throw fail('RANGE_INVALID', `Content-Range ${cr} covers ${Number(m[2]) - start + 1} bytes but Content-Length is ${length}`, { offset: rec.offset });
    }
  }
  const updated = await append(ctx, ex, rec, start);
  ex.send(202, sessionHeaders(ctx, updated));
}

export async function completeUpload(ctx: RegistryContext, ex: Exchange, repository: string, id: string): Promise<void> {
  let rec = session(ctx, ex, repository, id);
  const digestParam = ex.query.get('digest');
  if (!digestParam) throw fail('DIGEST_INVALID', 'the digest query parameter is required to complete an upload');
  const digest = parseDigest(digestParam);
  if (ex.header('transfer-encoding') || Number(ex.header('content-length') || '0') > 0) {
    rec = await append(ctx, ex, rec, undefined);
  }
  await ctx.uploads.commit(rec, digest);
  blobCreated(ctx, ex, repository, digest);
}

export async function uploadStatus(ctx: RegistryContext, ex: Exchange, repository: string, id: string): Promise<void> {
  ex.send(204, sessionHeaders(ctx, session(ctx, ex, repository, id)));
}

export async function cancelUpload(ctx: RegistryContext, ex: Exchange, repository: string, id: string): Promise<void> {
  await ctx.uploads.cancel(session(ctx, ex, repository, id));
  ex.send(204, { ...API_VERSION_HEADER });
}
