/**
 * Platform API response conventions (docs/platform-conventions.md 1.3-1.4) for every response of the API host:
 * JSON bodies, `Request-Id`, `ETag` (a hash of the body) and `Last-Modified` (the resource's
 * `updated_at`, the newest of a list, or now), `RateLimit-Remaining` when the request has an
 * account, `If-None-Match` → 304 with an empty body, and `{id, message}` errors.
 */
import { hash } from 'node:crypto';
import type { Exchange } from '../http/exchange.js';
import type { ApiCall, ApiContext } from './context.js';
import { fail, isSlipwayError } from '../../engine/errors.js';
import { API_ERRORS } from './error-codes.js';
import { storableString } from '../../engine/storage/metadata.js';

/** Largest JSON request body (bytes). */
export const MAX_JSON_BODY = 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a JSON object body; an empty body is `{}`.
 * @throws BAD_REQUEST for bytes that are not UTF-8 (RFC 8259 §8.1), malformed JSON, a
 *         non-object, or a string (value or name) with U+0000 or an unpaired surrogate escape,
 *         which no record may hold (engine/storage/metadata.ts `storableString`);
 *         BODY_TOO_LARGE past 1 MiB.
 */
export async function readJson(ex: Exchange): Promise<Record<string, unknown>> {
  const raw = await ex.body(MAX_JSON_BODY);
  if (raw.length === 0) return {};
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw fail('BAD_REQUEST', 'Request body is not valid UTF-8.');
  }
  let v: unknown;
  // Only an escape can put NUL or a lone surrogate into a string of valid UTF-8 JSON: look at
  // the strings only when the text has such an escape.
  const suspect = /\\u(?:0000|d[89a-f])/i.test(text);
  let unstorable = false;
  const reviver = (name: string, value: unknown) => {
    if (!storableString(name) || (typeof value === 'string' && !storableString(value))) unstorable = true;
    return value;
  };
  try {
    v = suspect ? JSON.parse(text, reviver) : JSON.parse(text);
  } catch (e) {
    throw fail('BAD_REQUEST', `Request body is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw fail('BAD_REQUEST', 'Request body must be a JSON object.');
  if (unstorable) throw fail('BAD_REQUEST', 'Request body strings must not contain U+0000 or unpaired surrogates (\\u0000, \\ud800…).');
  return v as Record<string, unknown>;
}

/** Options of `sendApi`. */
export interface SendOptions {
  /** ms since epoch of the last change of what the body shows; default now. */
  lastModified?: number;
  /** RateLimit-Remaining, when the request has an account. */
  remaining?: number | null;
  headers?: Record<string, string>;
}

/** The strong ETag of a body: the first 128 bits of its SHA-1, quoted. */
export function etagOf(text: string): string {
  return '"' + hash('sha1', text, 'hex').slice(0, 32) + '"';
}

/** True when an If-None-Match value names `etag` (weak comparison, RFC 9110 §13.1.2). */
export function noneMatch(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/** A serialized body and its ETag; handlers on hot paths may cache one (see account.ts). */
export interface Representation {
  text: string;
  etag: string;
}

/** Serializes a body. */
export function represent(body: unknown): Representation {
  const text = JSON.stringify(body);
  return { text, etag: etagOf(text) };
}

let lastDateMs = NaN;
let lastDate = '';

/** The HTTP date of `ms`, remembering the last one (hot paths send the same updated_at again and again). */
function httpDate(ms: number): string {
  if (ms !== lastDateMs) {
    lastDate = new Date(ms).toUTCString();
    lastDateMs = ms;
  }
  return lastDate;
}

/** Sends a platform API response with every common header; answers 304 when If-None-Match matches a 200. */
export function sendApi(ctx: ApiContext, ex: Exchange, status: number, body: unknown, opts: SendOptions = {}): void {
  sendRepresentation(ctx, ex, status, represent(body), opts);
}

/** `sendApi` for a body serialized beforehand. */
export function sendRepresentation(ctx: ApiContext, ex: Exchange, status: number, rep: Representation, opts: SendOptions = {}): void {
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'request-id': ex.id,
    etag: rep.etag,
    'last-modified': httpDate(opts.lastModified ?? ctx.clock.now()),
  };
  if (opts.headers) Object.assign(headers, opts.headers);
  if (opts.remaining !== undefined && opts.remaining !== null) headers['ratelimit-remaining'] = String(opts.remaining);
  const inm = ex.header('if-none-match');
  if (status === 200 && inm && (ex.method === 'GET' || ex.method === 'HEAD') && noneMatch(inm, rep.etag)) {
    delete headers['content-type'];
    return ex.send(304, headers);
  }
  ex.send(status, headers, rep.text, Buffer.byteLength(rep.text));
}

/** `sendApi` for a handler: carries the call's RateLimit-Remaining. `body` may be a cached Representation. */
export function reply(ctx: ApiContext, call: ApiCall, status: number, body: unknown, opts: Omit<SendOptions, 'remaining'> = {}): void {
  const o = { ...opts, remaining: call.remaining };
  if (body instanceof CachedRepresentation) sendRepresentation(ctx, call.ex, status, body, o);
  else sendApi(ctx, call.ex, status, body, o);
}

/** A Representation a handler keeps between requests, marked so `reply` sends it as it is. */
export class CachedRepresentation implements Representation {
  readonly text: string;
  readonly etag: string;
  constructor(body: unknown) {
    this.text = JSON.stringify(body);
    this.etag = etagOf(this.text);
  }
}

/** Sends `{id, message}` (plus `resource` when known) for an error; unknown errors are logged and hidden. */
export function sendApiError(ctx: ApiContext, ex: Exchange, e: unknown, remaining: number | null = null): void {
  if (ex.responded || ex.aborted) return;
  if (!isSlipwayError(e)) {
    ctx.log.error({ err: e, reqId: ex.id, path: ex.path }, 'api request failed');
    return sendApi(ctx, ex, 500, { id: 'internal_server_error', message: `Internal server error (request ${ex.id}).` }, { remaining });
  }
  const wire = API_ERRORS[e.code];
  const extra = typeof e.detail === 'object' && e.detail !== null && 'resource' in e.detail ? { resource: (e.detail as { resource: string }).resource } : {};
  const headers: Record<string, string> = {};
  if (e.code === 'UNAUTHORIZED') headers['www-authenticate'] = 'Bearer realm="slipway"';
  const allow = (e.detail as { allow?: unknown } | undefined)?.allow;
  if (Array.isArray(allow)) headers.allow = allow.join(', ');
  const retryAfter = (e.detail as { retryAfter?: unknown } | undefined)?.retryAfter;
  if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
  sendApi(ctx, ex, wire.status, { id: wire.code, message: e.message, ...extra }, { remaining, headers });
}
