/**
 * A byte-bounded cache of manifest content by digest that keeps what was used lately (two
 * generations, below). Content addressing makes it never stale: the
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

import { SeenFilter } from '../seen-filter.js';

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

/** Bytes `content` counts against the bound. */
function cost(content: ManifestContent): number {
  return content.bytes.length + ENTRY_OVERHEAD;
}

/**
 * Admission: once the cache evicts (its young generation has filled once), a manifest is cached
 * at its second read, not its first (a doorkeeper, as in TinyLFU): a digest read once is only
 * noted in a bit array (engine/seen-filter.ts). With reads spread over more manifests than the
 * cache holds (a pull of each of 100,000 images, most read once), caching every read made each
 * miss copy its bytes and insert an entry that lived just long enough to be promoted into V8's
 * old generation and die there; with this and the LMDB read memo's doorkeeper, 60,000 such reads
 * promoted 34 % less (docs/performance.md "What a random GET costs over a large store"). While
 * the cache has room (a registry whose manifests all fit) every read is cached, so a second read
 * is never a miss there; a manifest pulled again (a tag deployed to many dynos) is cached from
 * its second read on either way.
 *
 * Eviction: two generations, each a Map holding at most half the bound: entries go into the
 * young one, a hit in the old one moves there, and when the young one would pass half the bound
 * it becomes the old one (the old one's entries not used since are dropped whole). Every
 * operation is O(1):
 * an exact LRU on one Map evicted by iterating from its oldest entry, which V8 reaches by
 * stepping over the slots of every entry deleted since the table was last rebuilt; with GETs
 * spread over more manifests than the cache holds that walk cost ~5 µs per miss (profile of
 * the growth benchmark at 20,000 images, docs/performance.md "Growth").
 */
export class ManifestContentCache {
  #young = new Map<string, ManifestContent>();
  #old = new Map<string, ManifestContent>();
  #youngBytes = 0;
  #oldBytes = 0;
  /** The doorkeeper, made when the young generation first fills (entries are dropped from then on). */
  #seen: SeenFilter | null = null;

  /** @param maxBytes bound on the bytes of cached manifests plus ENTRY_OVERHEAD each (default 8 MiB) */
  constructor(readonly maxBytes = 8 * 1024 * 1024) {}

  /** The cached content of `digest`, kept in the young generation. */
  get(digest: string): ManifestContent | undefined {
    const young = this.#young.get(digest);
    if (young) return young;
    const old = this.#old.get(digest);
    if (old) {
      this.#old.delete(digest);
      this.#oldBytes -= cost(old);
      this.#add(digest, old);
    }
    return old;
  }

  /** True when `digest` is cached (not a use: nothing moves). */
  has(digest: string): boolean {
    return this.#young.has(digest) || this.#old.has(digest);
  }

  /**
   * Caches `content` (its bytes in memory of their own: a view on a larger buffer is copied)
   * unless it is over a quarter of the bound, already cached, or, once the cache evicts, read
   * for the first time (`digest` is then only noted: see the class comment). Callers keep using
   * the `content` they passed; `get` returns the cached one.
   */
  set(digest: string, content: ManifestContent): void {
    if (content.bytes.length > this.maxBytes / 4 || this.has(digest)) return;
    if (this.#seen?.firstSighting(digest)) return;
    this.#add(digest, { mediaType: content.mediaType, bytes: ownMemory(content.bytes) });
  }

  /** Puts an entry into the young generation, which first becomes the old one when the entry would take it past half the bound. */
  #add(digest: string, content: ManifestContent): void {
    const c = cost(content);
    if (this.#youngBytes + c > this.maxBytes / 2) {
      this.#seen ??= new SeenFilter();
      this.#old = this.#young;
      this.#oldBytes = this.#youngBytes;
      this.#young = new Map();
      this.#youngBytes = 0;
    }
    this.#young.set(digest, content);
    this.#youngBytes += c;
  }

  /** Bytes the cache counts now (manifest bytes plus ENTRY_OVERHEAD per entry), at most `maxBytes` (each generation holds at most half). */
  get bytes(): number {
    return this.#youngBytes + this.#oldBytes;
  }
}
