/**
 * The S3 backend's use of the SDK client (s3-backend.ts): settings that work with AWS S3 and RGW
 * alike, answers read as "not found", the middleware that turns a reaped session's "not found"
 * into BLOB_UPLOAD_INVALID, and requests whose SigV4 payload hash Slipway supplies.
 *
 * Signed payloads: over http, the SDK's SigV4 signer hashes every request body with sha256 on
 * the calling thread (the event loop), unless the request already carries
 * `x-amz-content-sha256`: then it signs that value instead (@smithy/signature-v4
 * `getPayloadHash`). The store hashes the body it receives and refuses the request when it
 * differs from the signed value (AWS S3 and RGW: 400 XAmzContentSHA256Mismatch), so a supplied
 * hash that is not the sha256 of the exact bytes sent makes the request fail; it never stores
 * other bytes. `signedPayload` is how Slipway supplies it: a blob PUT in one request signs the
 * blob's verified digest (no hashing at all), an UploadPart the part's sha256 computed on the
 * hash thread (s3-writer.ts).
 */
import type { S3Client, S3ClientConfig, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { fail } from '../errors.js';

/**
 * Client settings that work with AWS S3 and RGW 16 alike: path-style addressing, region
 * us-east-1 unless given, and request/response checksums only when an operation requires them
 * (RGW 16 has no aws-chunked trailers).
 */
export function s3ClientConfig(config: S3ClientConfig = {}): S3ClientConfig {
  return {
    region: 'us-east-1',
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...config,
  };
}

/** The HTTP status of an SDK error, when the store answered. */
function status(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

/** Whether an SDK error says the key, object or multipart upload does not exist. */
export function isNotFound(e: unknown): boolean {
  const name = (e as { name?: string }).name;
  return status(e) === 404 || name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchUpload';
}

const lostTranslated = new WeakSet<S3Client>();
/** A session object's key (`…uploads/[<node>/]<id>/data`), as a key or a copy source; blob keys end in their hex. */
const SESSION_OBJECT = /(^|\/)uploads\/([^/]+\/)?[A-Za-z0-9_-]+\/data$/;
/** Commands through which a session's commit reads or extends its multipart upload or object. */
const SESSION_COMMANDS = new Set(['UploadPartCommand', 'CompleteMultipartUploadCommand', 'HeadObjectCommand', 'GetObjectCommand', 'CopyObjectCommand', 'UploadPartCopyCommand']);

/**
 * Adds to `client` a middleware that turns a "not found" answer about a session's multipart
 * upload or completed object (an UploadPart, the completion, its size check or re-hash read,
 * the copy from it) into BLOB_UPLOAD_INVALID: the session's bytes are gone (another node reaped
 * it as a dead node's, engine/blobs/peer-sessions.ts), so it cannot proceed and the client
 * starts a new upload. Aborts and deletes keep the answer (a gone upload is no error there);
 * blob keys are never affected. Once per client.
 */
export function translateLostSessions(client: S3Client): void {
  if (lostTranslated.has(client)) return;
  lostTranslated.add(client);
  client.middlewareStack.add((next, context) => async (args) => {
    try {
      return await next(args);
    } catch (e) {
      const input = args.input as { Key?: string; CopySource?: string };
      const lost = isNotFound(e) && SESSION_COMMANDS.has(context.commandName ?? '') &&
        (SESSION_OBJECT.test(input.CopySource ?? '') || (!input.CopySource && SESSION_OBJECT.test(input.Key ?? '')));
      if (!lost) throw e;
      throw fail('BLOB_UPLOAD_INVALID', 'the upload session\'s bytes are no longer in the blob store (the session was reaped); start a new upload');
    }
  }, { step: 'initialize', priority: 'high', name: 'slipwayLostSession' });
}

type Handler = (args: { request: unknown }) => Promise<unknown>;
/** The part of the command's middleware stack used here (the SDK's overloads, loosened). */
type LooseStack = { add(mw: (next: Handler) => Handler, options: { step: 'build' | 'finalizeRequest'; priority?: 'low'; name: string }): void };

/**
 * Makes `command` (an UploadPart or PutObject) send `x-amz-content-sha256: <sha256Hex>`, which
 * the signer signs instead of hashing the body (see the file header): `sha256Hex` must be the
 * sha256 of exactly the body sent, or the store refuses the request. With `bodies`, each
 * attempt (the SDK retries) sends a fresh body made from those buffers in order, so a body of
 * several buffers needs no copy into one and is never a stream consumed by an earlier attempt.
 * @param sha256Hex lower-case hex of the body's sha256 (64 characters)
 * @returns `command`
 * @throws Error when `sha256Hex` is not 64 lower-case hex digits
 */
export function signedPayload<C extends PutObjectCommand | UploadPartCommand>(command: C, sha256Hex: string, bodies?: readonly Buffer[]): C {
  if (!/^[0-9a-f]{64}$/.test(sha256Hex)) throw new Error(`not a sha256 in hex: "${sha256Hex.slice(0, 80)}"`);
  const stack = command.middlewareStack as unknown as LooseStack;
  stack.add((next) => (args) => {
    (args.request as { headers: Record<string, string> }).headers['x-amz-content-sha256'] = sha256Hex;
    return next(args);
  }, { step: 'build', name: 'slipwaySignedPayload' });
  if (bodies) {
    // After the retry and signing middleware (finalizeRequest, low priority): once per attempt.
    stack.add((next) => (args) => {
      (args.request as { body: unknown }).body = bodies.length === 1 ? bodies[0] : Readable.from(bodies, { objectMode: false });
      return next(args);
    }, { step: 'finalizeRequest', priority: 'low', name: 'slipwayPayloadBody' });
  }
  return command;
}
