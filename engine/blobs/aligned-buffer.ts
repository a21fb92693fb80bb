/**
 * Shared buffers whose memory is page-aligned, so the filesystem backend can write them with
 * `O_DIRECT` (fs-writer.ts): the kernel then moves the bytes to the device without copying them
 * into the page cache. Measured on this project's VM (ext4 on virtio-blk), writing 1 GiB
 * buffered and then fdatasync cost 4.1 s of kernel CPU, `O_DIRECT` 0.15 s (`dd bs=4M`), and a
 * perf profile of a 1 GiB push put the page-cache copy (`copy_folio_from_iter_atomic`) level
 * with sha256 itself.
 *
 * `O_DIRECT` needs the memory address, the file offset and the length aligned (Linux: to the
 * device's DMA alignment and logical block size; 512 bytes here, 4096 is safe everywhere).
 * JavaScript cannot see an ArrayBuffer's address, and a plain SharedArrayBuffer comes from
 * malloc (16-byte aligned; measured ≡ 16 mod 512 for 1 MiB). A shared `WebAssembly.Memory` is
 * mapped by V8 on a page boundary and its `buffer` is a SharedArrayBuffer (the hash thread reads
 * it without a copy, like any other), so aligned buffers are made from one; its sizes are whole
 * 64 KiB WebAssembly pages. Buffers made here are remembered (`directReady` checks them).
 */

/** Alignment of address, file offset and length for direct writes (bytes). */
export const DIRECT_IO_ALIGN = 4096;
/** Size of one WebAssembly page (bytes): aligned buffers are multiples of it. */
const WASM_PAGE = 64 * 1024;

const aligned = new WeakSet<ArrayBufferLike>();

/** The part of the WebAssembly global used here (the project's TypeScript libs do not declare it). */
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number; maximum: number; shared: boolean }) => { buffer: SharedArrayBuffer };
};

/**
 * A zero-filled Buffer of `bytes` over a SharedArrayBuffer, page-aligned when `bytes` is a
 * multiple of 64 KiB (a plain SharedArrayBuffer otherwise, or when V8 refuses the memory).
 */
export function sharedBuffer(bytes: number): Buffer {
  if (bytes > 0 && bytes % WASM_PAGE === 0) {
    try {
      const pages = bytes / WASM_PAGE;
      const sab = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }).buffer;
      aligned.add(sab);
      return Buffer.from(sab);
    } catch {
      // address space or memory refused: an ordinary buffer is written through the page cache
    }
  }
  return Buffer.from(new SharedArrayBuffer(bytes));
}

/**
 * Whether `view` may be written with `O_DIRECT` at an aligned file offset: it lies in a buffer
 * made by `sharedBuffer` and starts and ends on `DIRECT_IO_ALIGN` boundaries.
 */
export function directReady(view: Uint8Array): boolean {
  return view.byteLength % DIRECT_IO_ALIGN === 0 && view.byteOffset % DIRECT_IO_ALIGN === 0 && aligned.has(view.buffer);
}
