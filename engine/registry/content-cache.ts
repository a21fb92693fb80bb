/**
 * A byte-bounded LRU of manifest content by digest. Content addressing makes it never stale: the
 * bytes of a digest cannot change, and callers check that the repository still holds the
 * manifest (tag or link record, one small read) before serving from it, so a manifest deleted by
 * another process (`slipway gc`) is never served. What it saves is decoding the full manifest
 * record (layers, image info) on every pull: the largest cost of a manifest GET.
 */

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

  /** Caches `content`, evicting the least recently used entries past the bound. */
  set(digest: string, content: ManifestContent): void {
    if (content.bytes.length > this.maxBytes / 4 || this.#entries.has(digest)) return;
    this.#entries.set(digest, content);
    this.#bytes += content.bytes.length;
    for (const [d, c] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(d);
      this.#bytes -= c.bytes.length;
    }
  }
}
