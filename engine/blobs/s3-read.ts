/**
 * What the S3 backend (s3-backend.ts) needs beyond the SDK: the store's unavailability as the
 * engine's BLOB_STORE_UNAVAILABLE (so the hosts answer 503 `UNAVAILABLE` with Retry-After instead
 * of 500, and never hang: the client's timeouts bound each request, docs/faults.md), and a positional `BlobReader` that
 * streams one GET per pull instead of one ranged GET per buffer the sender fills.
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { fail, isSlipwayError } from '../errors.js';
import type { Digest } from '../digest.js';
import type { BlobReader } from './contract.js';
import { recycleChunk } from './chunk-pool.js';

const NETWORK_CODES = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|ECONNABORTED|UND_ERR_SOCKET|UND_ERR_CLOSED|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT)$/;

/** Seconds a client is told to wait (Retry-After) when the blob store is unavailable. */
export const BLOB_STORE_RETRY_AFTER_SECONDS = 5;

/**
 * The store's unavailability as SlipwayError BLOB_STORE_UNAVAILABLE (`detail.retryAfter`
 * `BLOB_STORE_RETRY_AFTER_SECONDS`): no answer
 * (refused, reset, timed out after the client's `requestTimeout`, aborted; the SDK's errors and
 * undici's) or a 5xx answer
 * (503 SlowDown included). Any other error (a 404, a 403, a bug) is returned unchanged.
 */
export function storeUnavailable(e: unknown): unknown {
  if (isSlipwayError(e)) return e;
  const err = e as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const st = err.$metadata?.httpStatusCode;
  const noAnswer = (err.$metadata !== undefined && st === undefined) || NETWORK_CODES.test(err.code ?? '') || /Timeout|Abort/i.test(err.name ?? '');
  if (!noAnswer && !(st !== undefined && st >= 500)) return e;
  return fail('BLOB_STORE_UNAVAILABLE', `the blob store (S3) is unavailable: ${err.name ?? 'Error'}${err.code ? ` ${err.code}` : ''}${st ? ` HTTP ${st}` : ''}: ${err.message ?? String(e)}`, { retryAfter: BLOB_STORE_RETRY_AFTER_SECONDS });
}

const translated = new WeakSet<S3Client>();

/**
 * Adds to `client` an outermost middleware (after the SDK's retries) that throws every error of
 * `send` through `storeUnavailable`. Once per client.
 */
export function translateUnavailability(client: S3Client): void {
  if (translated.has(client)) return;
  translated.add(client);
  client.middlewareStack.add((next) => async (args) => {
    try {
      return await next(args);
    } catch (e) {
      throw storeUnavailable(e);
    }
  }, { step: 'initialize', priority: 'high', name: 'slipwayStoreUnavailable' });
}

/** A GetObject body: its stream, the position of its first byte and the end (exclusive) of its range. */
export interface OpenBody {
  body: Readable;
  at: number;
  end: number;
}

/**
 * A reader of a blob of `size` bytes that consumes one GetObject body (`from(offset, end)`: the
 * bytes from `offset` to `end`, exclusive) as sequential reads ask for bytes (the pull path reads
 * in order): `first`, when given, is a body opened already (`S3BlobBackend.open`). A read at
 * another position drops the body and opens one there; a body that ends before the blob does
 * is followed by one for the rest. `stream` hands a body over whole (its chunks are the
 * sender's, handed back through `recycle`, chunk-pool.ts). `close` drops the body and any handed over. Errors go through `storeUnavailable`.
 */
export function sequentialReader(digest: Digest, size: number, from: (offset: number, end: number) => Promise<Readable>, first?: OpenBody): BlobReader {
  let open: OpenBody | undefined = first;
  let chunks: AsyncIterator<Buffer> | undefined;
  let left: Buffer | undefined;
  const handed = new Set<Readable>();
  const drop = () => {
    open?.body.destroy();
    open = chunks = left = undefined;
  };
  const reopen = async (offset: number, end: number) => {
    drop();
    try {
      open = { body: await from(offset, end), at: offset, end };
    } catch (e) {
      throw storeUnavailable(e);
    }
  };
  return {
    digest,
    size,
    read: async (into, position) => {
      const length = Math.min(into.byteLength, size - position);
      if (length <= 0) return 0;
      if (open?.at !== position) await reopen(position, size);
      let done = 0;
      try {
        while (done < length) {
          if (!left || left.length === 0) {
            chunks ??= open!.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
            const r = await chunks.next();
            if (r.done) {
              if (open!.at !== open!.end || open!.end >= size) break; // short: the caller sees it
              await reopen(open!.end, size);
              continue;
            }
            left = r.value;
          }
          const n = Math.min(left.length, length - done);
          into.set(left.subarray(0, n), done);
          left = left.subarray(n);
          done += n;
          open!.at += n;
        }
      } catch (e) {
        drop();
        throw storeUnavailable(e);
      }
      return done;
    },
    stream: async (position, length) => {
      const end = position + length;
      if (!open || open.at !== position || open.end !== end || chunks) await reopen(position, end);
      const body = open!.body;
      open = undefined; // the sender's now
      handed.add(body);
      return body;
    },
    recycle: recycleChunk,
    close: async () => {
      drop();
      for (const b of handed) b.destroy();
      handed.clear();
    },
  };
}
