/**
 * What the S3 backend (s3-backend.ts) needs beyond the SDK: the store's unavailability as the
 * engine's UNAVAILABLE (so the hosts answer 503 with Retry-After instead of 500, and never
 * hang: the client's request timeout bounds each request), and a positional `BlobReader` that
 * streams one GET per pull instead of one ranged GET per buffer the sender fills.
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { fail, isSlipwayError } from '../errors.js';
import type { Digest } from '../digest.js';
import type { BlobReader } from './contract.js';

const NETWORK_CODES = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|ECONNABORTED)$/;

/**
 * The store's unavailability as SlipwayError UNAVAILABLE (`detail.retryAfter` 5 s): no answer
 * (refused, reset, timed out after the client's `requestTimeout`, aborted) or a 5xx answer
 * (503 SlowDown included). Any other error (a 404, a 403, a bug) is returned unchanged.
 */
export function storeUnavailable(e: unknown): unknown {
  if (isSlipwayError(e)) return e;
  const err = e as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const st = err.$metadata?.httpStatusCode;
  const noAnswer = (err.$metadata !== undefined && st === undefined) || NETWORK_CODES.test(err.code ?? '') || /Timeout|Abort/i.test(err.name ?? '');
  if (!noAnswer && !(st !== undefined && st >= 500)) return e;
  return fail('UNAVAILABLE', `the blob store (S3) is unavailable: ${err.name ?? 'Error'}${err.code ? ` ${err.code}` : ''}${st ? ` HTTP ${st}` : ''}: ${err.message ?? String(e)}`, { retryAfter: 5 });
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

/**
 * A reader of a blob of `size` bytes that opens one stream (`from(offset)`: the bytes from
 * `offset` to the end) at the first position read and consumes it as sequential reads ask for
 * bytes (the pull path reads in order); a read at another position drops that stream and opens
 * one there. `close` drops the stream. Errors of the stream go through `storeUnavailable`.
 */
export function sequentialReader(digest: Digest, size: number, from: (offset: number) => Promise<Readable>): BlobReader {
  let body: Readable | undefined;
  let chunks: AsyncIterator<Buffer> | undefined;
  let left: Buffer | undefined;
  let at = -1;
  const drop = () => {
    body?.destroy();
    body = chunks = left = undefined;
    at = -1;
  };
  return {
    digest,
    size,
    read: async (into, position) => {
      const length = Math.min(into.byteLength, size - position);
      if (length <= 0) return 0;
      if (position !== at) {
        drop();
        body = await from(position);
        chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
        at = position;
      }
      let done = 0;
      try {
        while (done < length) {
          if (!left || left.length === 0) {
            const r = await chunks!.next();
            if (r.done) break;
            left = r.value;
          }
          const n = Math.min(left.length, length - done);
          into.set(left.subarray(0, n), done);
          left = left.subarray(n);
          done += n;
        }
      } catch (e) {
        drop();
        throw storeUnavailable(e);
      }
      at = position + done;
      return done;
    },
    close: async () => drop(),
  };
}
