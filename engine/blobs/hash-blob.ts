/**
 * The sha256 of a committed blob, read through the blob contract (contract.ts `open`): the
 * re-hash of blob verification (quarantine.ts) and `slipway fsck --full`. No filesystem path is
 * involved, so it works on every backend. `hashPositional` is the same over any positional
 * source (the filesystem backend re-hashes a resumed upload session's file with it).
 *
 * Two 1 MiB buffers backed by SharedArrayBuffers alternate: one is hashed (on the server's hash
 * thread, workers/hash-thread.ts, which reads it without a copy) while the next is read; the
 * event loop only issues the reads.
 */
import type { Digest } from '../digest.js';
import type { BlobBackend, BlobReader } from './contract.js';
import { inlineHash, type HashFactory } from './running-hash.js';

/** Bytes read per call. */
const CHUNK_BYTES = 1024 * 1024;

/** What a re-hash found: the digest the bytes hash to and their count. */
export interface HashedBlob {
  digest: Digest;
  /** Bytes. */
  size: number;
}

/** Re-hashes committed blobs (bound to a backend and a hash factory). */
export type BlobHasher = (digest: Digest) => Promise<HashedBlob>;

/**
 * Hashes every byte of the committed blob `digest` with running hashes from `newHash`; when that
 * hash's state is lost (the hash thread died), hashes again on the calling thread.
 * @throws SlipwayError BLOB_UNKNOWN when the blob is absent; I/O errors of the backend.
 */
export async function hashBlob(blobs: BlobBackend, digest: Digest, newHash: HashFactory = inlineHash): Promise<HashedBlob> {
  const first = await hashOnce(blobs, digest, newHash);
  return first ?? (await hashOnce(blobs, digest, inlineHash))!;
}

/** A `BlobHasher` over `blobs`. */
export function blobHasher(blobs: BlobBackend, newHash: HashFactory = inlineHash): BlobHasher {
  return (digest) => hashBlob(blobs, digest, newHash);
}

/** Bytes readable by position: a `BlobReader`, or a session's file. */
export type PositionalSource = Pick<BlobReader, 'size' | 'read'>;

/**
 * Hashes every byte of `source` with running hashes from `newHash`; when that hash's state is
 * lost (the hash thread died), hashes again on the calling thread.
 * @throws I/O errors of the source.
 */
export async function hashPositional(source: PositionalSource, newHash: HashFactory = inlineHash): Promise<HashedBlob> {
  const first = await hashSource(source, newHash);
  return first ?? (await hashSource(source, inlineHash))!;
}

async function hashOnce(blobs: BlobBackend, digest: Digest, newHash: HashFactory): Promise<HashedBlob | null> {
  const reader = await blobs.open(digest);
  try {
    return await hashSource(reader, newHash);
  } finally {
    await reader.close();
  }
}

async function hashSource(reader: PositionalSource, newHash: HashFactory): Promise<HashedBlob | null> {
  const hash = newHash();
  let hex: string | null = null;
  try {
    const bufs = [0, 1].map(() => Buffer.from(new SharedArrayBuffer(Math.max(1, Math.min(CHUNK_BYTES, reader.size)))));
    const free: Array<Promise<void>> = [Promise.resolve(), Promise.resolve()];
    let size = 0;
    for (let i = 0; ; i ^= 1) {
      await free[i];
      const n = await reader.read(bufs[i]!, size);
      if (n === 0) break;
      size += n;
      free[i] = new Promise((resolve) => hash.update(bufs[i]!.subarray(0, n), resolve));
    }
    await Promise.all(free);
    hex = await hash.digest();
    return hex === null ? null : { digest: `sha256:${hex}` as Digest, size };
  } finally {
    if (hex === null) hash.discard();
  }
}
