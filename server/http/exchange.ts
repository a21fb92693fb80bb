/**
 * One HTTP request/response, independent of the transport. The registry runs the same handlers
 * on uWebSockets.js (registry host) and on the own HTTP/1.1 listener (upload host, see docs/decisions.md "Large layers"),
 * so handlers see only this interface.
 *
 * Rules: header names are lowercase; response headers never include Content-Length (the
 * transport writes it); a HEAD response passes the length it would have had.
 */

import type { Readable } from 'node:stream';
import { fail } from '../../engine/errors.js';
import { tryMaybe, type MaybePromise } from '../../engine/maybe-sync.js';
import { inReadScope } from '../../engine/storage/read-scope.js';

/**
 * Where a streamed request body goes: `write` returns false to ask for a pause until `onDrain`.
 * A sink may also offer the zero-copy pair `region`/`commit`: the transport reads socket bytes
 * straight into `region()` and reports how many with `commit(n)` (false = pause, as for write).
 */
export interface BodySink {
  /** Accepts a chunk (valid only during the call: the sink copies what it keeps). */
  write(chunk: Buffer): boolean;
  onDrain(cb: () => void): void;
  /** Free space to read into, or null when none is free now. */
  region?(): Buffer | null;
  /** `n` bytes were placed at the start of the last region; false asks for a pause. */
  commit?(n: number): boolean;
}

export type ResponseHeaders = Record<string, string>;

/**
 * Values kept for the life of one client connection (see `Exchange.memo`): each slot holds the
 * result of a pure computation over a request header that clients repeat on every request of a
 * keep-alive connection, with the header it came from (reused only for the very same header).
 */
export interface ConnectionMemo {
  /** The registry's parsed and hashed Authorization header (server/registry/access.ts). */
  credentials?: { header: string; value: unknown };
  /** The Authorization header of the last request the registry admitted on this connection (server/registry/routes.ts). */
  admitted?: string;
}

export interface Exchange {
  /** The method as sent: case-sensitive (RFC 9110 §9.1), so `delete` is not DELETE. */
  readonly method: string;
  /** Path without the query string, as sent (percent-encoding kept). */
  readonly path: string;
  readonly query: URLSearchParams;
  /** Request id for logs; the transport sends it as the `Request-Id` response header unless the handler set that header. */
  readonly id: string;
  readonly transport: 'uws' | 'h1';
  /** The client's IP address as text; '' when unknown (uWS: when first read after the response). */
  readonly remoteAddress: string;
  /** A request header by lowercase name; '' when absent. */
  header(name: string): string;
  /** The connection's memo (h1); undefined where the transport keeps none (uWS). */
  readonly memo?: ConnectionMemo;
  /** True once the client went away; nothing may be written after. */
  readonly aborted: boolean;
  /** True once a response was sent. */
  readonly responded: boolean;
  /** Status sent, for logs (0 until then). */
  readonly status: number;
  /**
   * Reads the whole body, at most `limit` bytes.
   * @throws SlipwayError BODY_TOO_LARGE past the limit, BAD_REQUEST when the client aborts.
   */
  body(limit: number): Promise<Buffer>;
  /**
   * Streams the body into `sink` with backpressure; resolves with the byte count at the end.
   * @throws SlipwayError BAD_REQUEST when the client aborts mid-body.
   */
  pipeBody(sink: BodySink): Promise<number>;
  /** Sends a complete response. `headLength` is the Content-Length a HEAD response reports. */
  send(status: number, headers: ResponseHeaders, body?: string | Buffer, headLength?: number): void;
  /**
   * Streams `length` bytes of `source` from byte `start`, with backpressure; resolves when done
   * or aborted. The caller closes `source` afterwards. A read error cuts the body short (the
   * client sees a short body, never a wrong one).
   */
  sendBytes(status: number, headers: ResponseHeaders, source: ByteSource, start: number, length: number): Promise<void>;
}

/**
 * Reads a whole body of at most `limit` bytes through `pipeBody` (shared by the adapters).
 * @param declared the request's Content-Length header ('' when absent)
 * @throws SlipwayError BODY_TOO_LARGE past the limit (declared or seen).
 */
export async function collectBody(declared: string, pipeBody: (sink: BodySink) => Promise<number>, limit: number): Promise<Buffer> {
  if (Number(declared || '0') > limit) throw fail('BODY_TOO_LARGE', `request body of ${declared} bytes exceeds the ${limit}-byte limit`);
  const parts: Buffer[] = [];
  let size = 0;
  await pipeBody({
    write: (c) => {
      size += c.length;
      if (size > limit) throw fail('BODY_TOO_LARGE', `request body exceeds the ${limit}-byte limit`);
      parts.push(Buffer.from(c));
      return true;
    },
    onDrain: () => {},
  });
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
}

/**
 * Bytes a response streams by position (a blob reader, engine/blobs/contract.ts `BlobReader`):
 * `read` fills `into` from byte `position` and resolves with the count (fewer only at the end).
 */
export interface ByteSource {
  read(into: Uint8Array, position: number): Promise<number>;
  /**
   * Optional: the `length` bytes from `position` as a stream of chunks the sender may keep
   * (contract.ts `BlobReader.stream`); senders use it instead of `read` when present.
   */
  stream?(position: number, length: number): Promise<Readable>;
  /**
   * Optional, with `stream`: called with each chunk of the stream once the socket took all of it
   * (or its write failed); the source may then reuse its memory (contract.ts `BlobReader.recycle`).
   */
  recycle?(chunk: Buffer): void;
  /**
   * Optional: bytes from `position`, at most `length`, in a buffer the source owns, valid until
   * the next call (contract.ts `BlobReader.lend`); senders that finish with each chunk before
   * asking for the next use it instead of `read`.
   */
  lend?(position: number, length: number): Promise<Uint8Array>;
}

/**
 * Handles one exchange; must always end in `send`/`sendBytes` (or the client aborting). A
 * handler that could answer at once returns nothing (errors are thrown), else a Promise
 * (errors reject); see engine/maybe-sync.ts and `runHandler`.
 */
export type Handler = (ex: Exchange) => MaybePromise<void>;

/**
 * Runs `handler` on `ex`, handing an error it throws or rejects with to `onError` (the
 * transports' one call site), in a read scope of its own (engine/storage/read-scope.ts).
 */
export function runHandler(handler: Handler, ex: Exchange, onError: (ex: Exchange, e: unknown) => void): void {
  void tryMaybe(() => inReadScope(handler, ex), (e) => onError(ex, e));
}
