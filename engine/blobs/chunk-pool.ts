/**
 * Read buffers for relayed blob bytes (the S3 backend's object GETs, s3-get.ts): each socket read
 * goes into a buffer of `CHUNK_BYTES` taken here, the bytes read are handed to the sender as a
 * chunk (a view of that buffer), and the sender gives the chunk back with `recycleChunk` once the
 * client's socket has taken it. A relayed GiB then allocates a few buffers instead of one per
 * read (the garbage collector's threads cost more CPU per GiB than the relay itself did).
 *
 * Safety rule: a buffer is reused only after `recycleChunk` of the one chunk lent from it, so a
 * sender that never recycles (or a reader that keeps chunks) only costs allocations; recycling a
 * chunk that is still being written is the one way to corrupt a response, hence senders recycle
 * only in the write's completion (h1) or once uWS took the last byte (uws). A chunk that is not
 * lent from here (any other Buffer) is ignored.
 */

/** Size of each read buffer (bytes): 256 KiB, several loopback reads' worth. */
export const CHUNK_BYTES = 256 * 1024;
/** Buffers kept for reuse when no read needs them (at most CHUNK_BYTES × this of idle memory). */
const KEEP = 16;

const free: Buffer[] = [];
/** Buffers (by their memory) lent out as a chunk and not yet recycled. */
const lent = new WeakSet<ArrayBuffer>();

/** A buffer of CHUNK_BYTES for the next socket read (a recycled one when there is one). */
export function readBuffer(): Buffer {
  return free.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
}

/**
 * Marks `buf` (from `readBuffer`) as lent through one chunk: it returns to the pool only through
 * `recycleChunk` of that chunk.
 */
export function lend(buf: Buffer): void {
  lent.add(buf.buffer as ArrayBuffer);
}

/**
 * Gives back a buffer that was taken with `readBuffer` and never lent (its bytes were consumed
 * where they were read, e.g. a response head).
 */
export function giveBack(buf: Buffer): void {
  if (buf.length === CHUNK_BYTES && buf.byteOffset === 0 && free.length < KEEP && !lent.has(buf.buffer as ArrayBuffer)) free.push(buf);
}

/**
 * The sender is done with `chunk` (the socket took all of it): its buffer may be reused for a
 * later read. Chunks not lent by this pool, and second calls, are ignored.
 */
export function recycleChunk(chunk: Uint8Array): void {
  const ab = chunk.buffer as ArrayBuffer;
  if (!lent.has(ab)) return;
  lent.delete(ab);
  if (free.length < KEEP) free.push(Buffer.from(ab, 0, CHUNK_BYTES));
}

/** Buffers ready for reuse (tests). @internal */
export function pooledChunks(): number {
  return free.length;
}
