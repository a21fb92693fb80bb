/**
 * Shared buffers whose memory is page-aligned, so they can be used with `O_DIRECT`: the
 * filesystem backend reads blobs that are not in the page cache directly into them
 * (fs-reader.ts), and the upload writer's buffers are made here too (the hash thread reads them
 * without a copy). Pushed bytes are written through the page cache (fs-writer.ts): a direct write
 * saved the kernel's copy into the cache (measured 2026-11-23, `dd bs=4M` of 1 GiB: 4.1 s of
 * kernel CPU buffered with fdatasync against 0.15 s direct, on a busy machine; 0.4–1.9 s buffered
 * on 2026-11-26), but left every first pull to the disk.
 *
 * `O_DIRECT` needs the memory address, the file offset and the length aligned (Linux: to the
 * device's DMA alignment and logical block size; 512 bytes here, 4096 is safe everywhere).
 * JavaScript cannot see an ArrayBuffer's address, and a plain SharedArrayBuffer comes from
 * malloc (16-byte aligned; measured ≡ 16 mod 512 for 1 MiB). A shared `WebAssembly.Memory` is
 * mapped by V8 on a page boundary and its `buffer` is a SharedArrayBuffer (the hash thread reads
 * it without a copy, like any other), so aligned buffers are made from one; its sizes are whole
 * 64 KiB WebAssembly pages. Buffers made here are remembered (`directReady` checks them).
 */

/** Alignment of address, file offset and length for direct I/O (bytes). */
export const DIRECT_IO_ALIGN = 4096;
/** Size of one WebAssembly page (bytes): aligned buffers are multiples of it. */
const WASM_PAGE = 64 * 1024;

const aligned = new WeakSet<ArrayBufferLike>();

/** The part of the WebAssembly global used here (the project's TypeScript libs do not declare it). */
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number; maximum: number; shared: boolean }) => { buffer: SharedArrayBuffer };
};

/**
 * Free shared buffers of this process by size (bytes), reused before any new one is made.
 *
 * Why a pool: V8 does not count the memory of a SharedArrayBuffer or of a shared
 * `WebAssembly.Memory` as external memory that calls for a garbage collection, so such buffers
 * dropped to the garbage collector stay mapped until a major collection happens for other
 * reasons (the JavaScript heap growing), which during an upload may be never. Measured on Node
 * 20: 300 buffers of 4 MiB made and dropped one after the other (at most 5 alive) left 1243 MiB
 * resident with `WebAssembly.Memory`, 766 MiB with SharedArrayBuffer, 94 MiB with
 * `Buffer.allocUnsafeSlow`; the S3 bench's 64 × 16 MiB push grew the server to ~1 GiB, in steps
 * of each request's buffers. Buffers given back with `recycleShared` are kept here instead, so
 * the shared memory of the process is the most ever in use at once (bounded by the upload budget,
 * writer.ts) plus at most `sharedPoolLimit` bytes of free buffers.
 */
const pool = new Map<number, Buffer[]>();
let pooledBytes = 0;
/** Most bytes of free buffers kept in the pool; default 256 MiB (`setSharedPoolLimit`). */
let sharedPoolLimit = 256 * 1024 * 1024;

/**
 * Sets the most bytes of free shared buffers the process keeps for reuse (the server sets its
 * upload budget, SLIPWAY_UPLOAD_MEMORY): a buffer given back beyond it is left to the garbage
 * collector. Process-wide; the last call wins.
 * @throws RangeError when `bytes` is not a non-negative safe integer
 */
export function setSharedPoolLimit(bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`shared pool limit must be a non-negative integer of bytes, got ${bytes}`);
  sharedPoolLimit = bytes;
}

/** Bytes of free shared buffers held for reuse (tests and diagnostics). */
export function sharedPooledBytes(): number {
  return pooledBytes;
}

/**
 * Gives back a buffer made by `sharedBuffer` that nothing (no socket, no thread, no other view)
 * will touch again; a later `sharedBuffer` of the same size returns it (its bytes not zeroed).
 * A view that does not cover a whole buffer is ignored.
 */
export function recycleShared(buf: Buffer): void {
  if (buf.byteOffset !== 0 || buf.length !== buf.buffer.byteLength || buf.length === 0) return;
  if (pooledBytes + buf.length > sharedPoolLimit) return;
  let list = pool.get(buf.length);
  if (!list) pool.set(buf.length, (list = []));
  list.push(buf);
  pooledBytes += buf.length;
}

/** Whether a free buffer of `bytes` is in the pool (`sharedBuffer(bytes)` would reuse it). */
export function sharedPooled(bytes: number): boolean {
  return (pool.get(bytes)?.length ?? 0) > 0;
}

/**
 * A Buffer of `bytes` over a SharedArrayBuffer, page-aligned when `bytes` is a multiple of
 * 64 KiB (a plain SharedArrayBuffer otherwise, or when V8 refuses the memory): a pooled one
 * given back with `recycleShared` (old bytes in it), else a new zero-filled one.
 */
export function sharedBuffer(bytes: number): Buffer {
  const reused = pool.get(bytes)?.pop();
  if (reused) {
    pooledBytes -= bytes;
    return reused;
  }
  if (bytes > 0 && bytes % WASM_PAGE === 0) {
    try {
      const pages = bytes / WASM_PAGE;
      const sab = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }).buffer;
      aligned.add(sab);
      return Buffer.from(sab);
    } catch {
      // address space or memory refused: an ordinary buffer (not for direct I/O)
    }
  }
  return Buffer.from(new SharedArrayBuffer(bytes));
}

/**
 * Whether `view` may be read into or written with `O_DIRECT` at an aligned file offset: it lies in a buffer
 * made by `sharedBuffer` and starts and ends on `DIRECT_IO_ALIGN` boundaries.
 */
export function directReady(view: Uint8Array): boolean {
  return view.byteLength % DIRECT_IO_ALIGN === 0 && view.byteOffset % DIRECT_IO_ALIGN === 0 && aligned.has(view.buffer);
}
