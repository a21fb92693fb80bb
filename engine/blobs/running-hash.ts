/**
 * The running sha256 of an upload session (docs/architecture.md (Blob upload): the digest is computed while
 * bytes stream in). Bytes are fed in order with a callback telling when the buffer may be reused,
 * so an implementation may hash on another thread (workers/hash-thread.ts) while the same buffer
 * is being written to disk.
 */
import { createHash } from 'node:crypto';

/** Incremental sha256 of one session's bytes. */
export interface RunningHash {
  /** Adds `bytes` (in order); `done` runs once they were read and the buffer may be reused. */
  update(bytes: Buffer, done: () => void): void;
  /**
   * Hex sha256 of everything fed, ending the hash; null when the state was lost (the caller then
   * re-hashes the file).
   */
  digest(): Promise<string | null>;
  /** Drops the state without a digest. */
  discard(): void;
  /**
   * Optional (the hash thread, workers/hash-thread.ts): whether the next bytes should rather be
   * hashed by `hashAndWrite` together with their write than by `update` beside it. True while
   * other sessions have bytes on the hash threads too: the CPUs are then all busy, and the bytes
   * are cheaper to hash in the thread that writes them than later, after other sessions' bytes
   * went through the caches (docs/storage.md "Hash threads, and hashing where the bytes are written").
   */
  prefersHashAndWrite?(): boolean;
  /**
   * Optional (the hash thread): writes `parts` in order at `position` of `fd`, first adding each
   * part whose `hash` is true to the hash (next in order: parts not flagged were fed by `update`
   * earlier), both on the hash's thread while the bytes are in its CPU's caches. Parts must be
   * backed by a SharedArrayBuffer. Resolves with the bytes written, or null when the thread was
   * lost before it answered (the hash state is then lost, and the caller writes the parts
   * itself: positional writes may be repeated).
   * @throws the write's error (its errno `code` kept) with `written`, the bytes written before it.
   */
  hashAndWrite?(parts: readonly HashWritePart[], fd: number, position: number): Promise<number | null>;
}

/** One buffer for `RunningHash.hashAndWrite`: its bytes, and whether they still need hashing. */
export interface HashWritePart {
  bytes: Uint8Array;
  hash: boolean;
}

/** Creates a running hash for a new session. */
export type HashFactory = () => RunningHash;

/** A running hash on the calling thread (node:crypto). */
export function inlineHash(): RunningHash {
  const h = createHash('sha256');
  return {
    update(bytes, done) {
      h.update(bytes);
      done();
    },
    digest: () => Promise.resolve(h.digest('hex')),
    discard: () => {},
  };
}

/**
 * A hash that keeps nothing: for sessions whose earlier bytes were not hashed (after a restart),
 * which are re-hashed from the file at completion anyway.
 */
export function lostHash(): RunningHash {
  return {
    update: (_bytes, done) => done(),
    digest: () => Promise.resolve(null),
    discard: () => {},
  };
}
