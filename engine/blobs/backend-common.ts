/**
 * Rules shared by every blob backend (contract.ts): session id and range checks, the running
 * hash of a session, the digest verification at commit, and a copy between backends.
 */
import { randomBytes } from 'node:crypto';
import { fail } from '../errors.js';
import type { Digest } from '../digest.js';
import { isSessionId, type BlobBackend, type BlobWriter, type ByteRange } from './contract.js';
import { isSlipwayError } from '../errors.js';

/**
 * Validates a session id given to `create`/`resume`/`abortSession`.
 * @throws SlipwayError BLOB_UPLOAD_INVALID when malformed.
 */
export function checkSessionId(id: string): void {
  if (!isSessionId(id)) throw fail('BLOB_UPLOAD_INVALID', `invalid upload session id "${id.slice(0, 40)}": expected 1–128 of [A-Za-z0-9_-]`);
}

/**
 * Resolves `range` against a blob of `size` bytes to inclusive `[start, end]` (end clamped to the
 * last byte, as HTTP Range does), or undefined for the whole blob.
 * @throws SlipwayError BYTE_RANGE_INVALID for a negative offset or a length < 1;
 *   RANGE_NOT_SATISFIABLE when the offset is at or past the end.
 */
export function resolveRange(size: number, range: ByteRange | undefined): { start: number; end: number } | undefined {
  if (!range) return undefined;
  const { offset, length } = range;
  if (!Number.isSafeInteger(offset) || offset < 0 || (length !== undefined && (!Number.isSafeInteger(length) || length < 1))) {
    throw fail('BYTE_RANGE_INVALID', `invalid byte range (offset ${offset}, length ${length})`);
  }
  if (offset >= size) throw fail('RANGE_NOT_SATISFIABLE', `range starts at byte ${offset} but the blob has ${size} bytes`, { size });
  return { start: offset, end: Math.min(size, length === undefined ? size : offset + length) - 1 };
}

/**
 * `BlobWriter.append` in terms of its two halves: feeds `bytes` to the writer's running hash
 * and writes them, resolving once both are done with the buffer.
 */
export async function appendHashed(writer: BlobWriter, bytes: Uint8Array): Promise<void> {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const hashed = new Promise<void>((resolve) => writer.feedHash(buf, resolve));
  await Promise.all([writer.write([bytes]), hashed]);
}

/**
 * Compares a computed sha256 (`sha256:<hex>`) with the digest the client claimed.
 * @throws SlipwayError DIGEST_INVALID when they differ.
 */
export function verifyDigest(expected: Digest, actual: Digest): void {
  if (expected !== actual) {
    throw fail('DIGEST_INVALID', `provided digest ${expected} does not match uploaded content (${actual}); nothing was stored`, { expected, actual });
  }
}

/**
 * Per-digest mutual exclusion within one process: commits of the same digest run one after the
 * other so that exactly one of them creates the blob.
 */
export class DigestLocks {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` once every earlier holder of `digest` finished. */
  async with<T>(digest: Digest, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(digest) ?? Promise.resolve();
    const mine = prev.then(fn, fn);
    const settled = mine.catch(() => {});
    this.#tails.set(digest, settled);
    try {
      return await mine;
    } finally {
      if (this.#tails.get(digest) === settled) this.#tails.delete(digest);
    }
  }
}

/**
 * Copies the committed blob `digest` from `from` to `to` through the contract (a read stream
 * into a new session of `to`, committed under the digest, so the copy is verified).
 * @returns false when `from` has no such blob.
 * @throws DIGEST_INVALID when the bytes read do not hash to `digest`; I/O errors of either side.
 */
export async function copyThrough(from: BlobBackend, to: BlobBackend, digest: Digest): Promise<boolean> {
  let source;
  try {
    source = await from.read(digest);
  } catch (e) {
    if (isSlipwayError(e) && e.code === 'BLOB_UNKNOWN') return false;
    throw e;
  }
  const w = await to.create(`copy-${randomBytes(12).toString('hex')}`);
  try {
    for await (const chunk of source) await w.append(chunk as Buffer);
  } catch (e) {
    await w.abort();
    throw e;
  }
  await w.commit(digest);
  return true;
}
