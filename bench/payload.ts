/**
 * Benchmark payloads without big buffers: one pre-generated random pattern (16 MiB) repeated,
 * with a 16-byte salt at the end of each blob so blobs differ. Digests are computed before any
 * timing, from a shared hash state (`Hash.copy()`), so each extra blob costs one tiny update.
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { Readable } from 'node:stream';

/** Bytes replaced by a salt at the end of each blob. */
const SALT_BYTES = 16;

/** A blob described as a list of chunks, each a list of buffer segments (views of the pattern). */
export interface Blob {
  size: number;
  digest: string;
  /** Chunks of `chunkSize` bytes each (the last may be shorter); each chunk is a list of segments. */
  chunks: Buffer[][];
}

/** Makes blobs of a given size from one random pattern. */
export class PayloadFactory {
  readonly pattern: Buffer;
  readonly #prefixState = new Map<number, Hash>();

  /** Generates the random pattern of `patternBytes`. */
  constructor(patternBytes: number) {
    this.pattern = randomBytes(patternBytes);
  }

  /**
   * A blob of `size` bytes (a multiple of the pattern size, or at most one pattern): the
   * pattern repeated, its last 16 bytes replaced by `salt`-derived bytes.
   */
  blob(size: number, salt: string): Blob {
    const p = this.pattern;
    if (size > p.length && size % p.length !== 0) throw new Error(`blob size ${size} must be a multiple of ${p.length}`);
    const chunkSize = Math.min(size, p.length);
    const count = size / chunkSize;
    const head = p.subarray(0, chunkSize - SALT_BYTES);
    const tail = createHash('sha256').update(salt).digest().subarray(0, SALT_BYTES);
    const chunks: Buffer[][] = [];
    for (let i = 0; i < count - 1; i++) chunks.push([p.subarray(0, chunkSize)]);
    chunks.push([head, tail]);
    const digest = 'sha256:' + this.#prefix(size, chunkSize, count).copy().update(tail).digest('hex');
    return { size, digest, chunks };
  }

  /** Hash state of everything but the salt, computed once per blob size. */
  #prefix(size: number, chunkSize: number, count: number): Hash {
    let h = this.#prefixState.get(size);
    if (!h) {
      h = createHash('sha256');
      for (let i = 0; i < count - 1; i++) h.update(this.pattern.subarray(0, chunkSize));
      h.update(this.pattern.subarray(0, chunkSize - SALT_BYTES));
      this.#prefixState.set(size, h);
    }
    return h;
  }
}

/** A stream of the given segments, in order, without copying them. */
export function streamOf(segments: Buffer[]): Readable {
  return Readable.from((function* () {
    for (const s of segments) yield s;
  })(), { objectMode: false });
}

/** All segments of a blob, in order. */
export function segmentsOf(blob: Blob): Buffer[] {
  return blob.chunks.flat();
}

/** Byte length of a list of segments. */
export function lengthOf(segments: Buffer[]): number {
  return segments.reduce((n, s) => n + s.length, 0);
}
