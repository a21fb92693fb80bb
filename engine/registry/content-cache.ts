/**
 * A byte-bounded LRU of manifest content by digest. Content addressing makes it never stale: the
 * bytes of a digest cannot change, and callers check that the repository still holds the
 * manifest (tag or link record, one small read) before serving from it, so a manifest deleted by
 * another process (`slipway gc`) is never served. What it saves is decoding the full manifest
 * record (layers, image info) on every pull: the largest cost of a manifest GET.
 *
 * ## Memory
 * The bound counts what an entry keeps alive, not only its length: a small Buffer made by
 * `Buffer.from(string)` is a view on an 8 KiB slab of Node's shared pool (`Buffer.poolSize`), and
 * keeping the view keeps the whole slab, so 8 MiB of cached manifests of ~600 bytes held up to
 * 110 MiB of slabs (bench/README.md "Growth"). `set` therefore copies a view that does not span
 * its whole ArrayBuffer into memory of its own, and counts each entry's bytes plus
 * `ENTRY_OVERHEAD` (the Map entry, the objects, the ArrayBuffer's own allocation).
 */

/** Bytes an entry costs besides its manifest bytes (Map slot, entry and Buffer objects, backing-store header), a round upper estimate. */
export const ENTRY_OVERHEAD = 256;

/** `bytes` itself when it spans its whole ArrayBuffer, else a copy that does (never a view on a pool slab). */
export function ownMemory(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) return bytes;
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
}

/** What a manifest GET serves. */
export interface ManifestContent {
  mediaType: string;
  /** The exact bytes pushed. */
  bytes: Buffer;
}

export class ManifestContentCache {
  readonly #entries = new Map<string, ManifestContent>();
  #bytes = 0;

  /** @param maxBytes bound on the bytes of cached manifests (default 8 MiB) */
  constructor(readonly maxBytes = 8 * 1024 * 1024) {}

  /** The cached content of `digest`, marked recently used. */
  get(digest: string): ManifestContent | undefined {
    const hit = this.#entries.get(digest);
    if (hit) {
      this.#entries.delete(digest);
      this.#entries.set(digest, hit);
    }
    return hit;
  }

  /**
   * Caches `content` (its bytes in memory of their own: a view on a larger buffer is copied),
   * evicting the least recently used entries past the bound. Callers keep using the `content`
   * they passed; `get` returns the cached one.
   */
  set(digest: string, content: ManifestContent): void {
    if (content.bytes.length > this.maxBytes / 4 || this.#entries.has(digest)) return;
    this.#entries.set(digest, { mediaType: content.mediaType, bytes: ownMemory(content.bytes) });
    this.#bytes += content.bytes.length + ENTRY_OVERHEAD;
    for (const [d, c] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(d);
      this.#bytes -= c.bytes.length + ENTRY_OVERHEAD;
    }
  }

  /** Bytes the cache counts now (manifest bytes plus ENTRY_OVERHEAD per entry), at most `maxBytes`. */
  get bytes(): number {
    return this.#bytes;
  }
}
