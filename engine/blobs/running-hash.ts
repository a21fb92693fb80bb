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
