/**
 * The S3 backend's upload session writer (s3-backend.ts documents the keys, the part buffer and
 * the commit). Appended or written bytes are copied into a part buffer of `partSize` bytes;
 * each full buffer becomes an UploadPart of a multipart upload created on the first full part,
 * with at most `uploadConcurrency` parts in flight. Between requests (`suspend`) the writer
 * keeps its multipart state and part buffer in memory: a session cannot outlive the process.
 */
import {
  HeadObjectCommand, GetObjectCommand, DeleteObjectCommand, CreateMultipartUploadCommand, UploadPartCommand,
  CompleteMultipartUploadCommand, type CompletedPart,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import { fail } from '../errors.js';
import type { Digest } from '../digest.js';
import type { BlobStat, BlobWriter, CommitOptions, CommitResult } from './contract.js';
import { appendHashed, verifyDigest } from './backend-common.js';
import type { RunningHash } from './running-hash.js';
import type { S3BlobBackend } from './s3-backend.js';

const reuseAlways = () => true;

/** One session: a part buffer, the running hash, the multipart upload once the first part is full. */
export class S3Writer implements BlobWriter {
  size = 0;
  #hashed = 0;
  #buf: Buffer | undefined;
  #fill = 0;
  #uploadId: Promise<string> | undefined;
  readonly #parts: CompletedPart[] = [];
  readonly #inflight = new Set<Promise<void>>();
  #error: unknown;
  #closed = false;
  readonly #key: string;

  constructor(readonly backend: S3BlobBackend, readonly id: string, readonly hash: RunningHash, readonly release: () => void) {
    this.#key = backend.sessionKey(id);
  }

  #check(): void {
    if (this.#closed) throw fail('BLOB_UPLOAD_UNKNOWN', `upload session ${this.id} is closed`);
    if (this.#error) throw this.#error;
  }

  #multipart(): Promise<string> {
    this.#uploadId ??= this.backend.client
      .send(new CreateMultipartUploadCommand({ Bucket: this.backend.bucket, Key: this.#key }))
      .then((r) => r.UploadId!);
    return this.#uploadId;
  }

  /** Starts uploading the current buffer as the next part. */
  #flush(): void {
    const body = this.#fill === this.#buf!.length ? this.#buf! : this.#buf!.subarray(0, this.#fill);
    const PartNumber = this.#parts.length + 1;
    const entry: CompletedPart = { PartNumber };
    this.#parts.push(entry);
    this.#buf = undefined;
    this.#fill = 0;
    const p = (async () => {
      const UploadId = await this.#multipart();
      const r = await this.backend.client.send(new UploadPartCommand({
        Bucket: this.backend.bucket, Key: this.#key, UploadId, PartNumber, Body: body, ContentLength: body.length,
      }));
      entry.ETag = r.ETag;
    })().catch((e) => { this.#error ??= e; });
    const tracked = p.finally(() => this.#inflight.delete(tracked));
    this.#inflight.add(tracked);
  }

  feedHash(bytes: Buffer, done: () => void): void {
    this.#check();
    this.#hashed += bytes.length;
    this.hash.update(bytes, done);
  }

  async write(chunks: readonly Uint8Array[]): Promise<void> {
    this.#check();
    const partSize = this.backend.partSize;
    for (const bytes of chunks) {
      let at = 0;
      while (at < bytes.byteLength) {
        this.#buf ??= Buffer.allocUnsafe(partSize);
        const n = Math.min(partSize - this.#fill, bytes.byteLength - at);
        this.#buf.set(bytes.subarray(at, at + n), this.#fill);
        this.#fill += n;
        at += n;
        this.size += n;
        if (this.#fill === partSize) {
          this.#flush();
          while (this.#inflight.size >= this.backend.uploadConcurrency) await Promise.race(this.#inflight);
          this.#check();
        }
      }
    }
  }

  append(bytes: Uint8Array): Promise<void> {
    return appendHashed(this, bytes);
  }

  /** The parts in flight are stored; the part being filled stays in memory until it is full. */
  async sync(): Promise<void> {
    while (this.#inflight.size) await Promise.race(this.#inflight);
    if (this.#error) throw this.#error;
  }

  /** Nothing to release: the multipart state and the part buffer stay in memory. */
  suspend(): void {}

  async commit(expected: Digest, options: CommitOptions = {}): Promise<CommitResult> {
    this.#check();
    this.#closed = true;
    try {
      const reuse = options.reuse ?? reuseAlways;
      const hex = this.#hashed === this.size ? await this.hash.digest() : (this.hash.discard(), null);
      let created: boolean;
      if (this.#uploadId === undefined) {
        const small = this.#buf ? this.#buf.subarray(0, this.#fill) : Buffer.alloc(0);
        const actual = hex !== null ? (`sha256:${hex}` as Digest) : sha256Of(small);
        verifyDigest(expected, actual);
        created = await this.backend.publish(actual, this.size, small, this.#key, reuse);
      } else {
        if (hex !== null) verifyDigest(expected, `sha256:${hex}` as Digest);
        if (this.#fill > 0) this.#flush();
        while (this.#inflight.size) await Promise.race(this.#inflight);
        if (this.#error) throw this.#error;
        created = await this.#completeAndPublish(expected, hex === null, reuse);
      }
      this.release();
      return { digest: expected, size: this.size, created };
    } catch (e) {
      await this.#discard();
      throw e;
    }
  }

  /**
   * Completes the multipart upload under the session key, checks its size (and, when the hash
   * state was lost, its sha256 read back), then publishes it under the digest.
   */
  async #completeAndPublish(digest: Digest, rehash: boolean, asked: (existing: BlobStat) => boolean | Promise<boolean>): Promise<boolean> {
    const { client, bucket } = this.backend;
    let answer: Promise<boolean> | undefined;
    const reuse = (existing: BlobStat) => (answer ??= Promise.resolve(asked(existing))); // asked once
    const existing = rehash ? undefined : await this.backend.stat(digest);
    if (existing && existing.size === this.size && (await reuse(existing))) {
      await this.#discard(); // dedupe: no need to complete
      return false;
    }
    const UploadId = await this.#multipart();
    await client.send(new CompleteMultipartUploadCommand({
      Bucket: bucket, Key: this.#key, UploadId, MultipartUpload: { Parts: this.#parts },
    }));
    this.#uploadId = undefined;
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: this.#key }));
    if (head.ContentLength !== this.size) {
      throw fail('BLOB_UPLOAD_INVALID', `upload session ${this.id}: the store holds ${head.ContentLength} bytes, ${this.size} were sent`);
    }
    if (rehash) {
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: this.#key }));
      const h = createHash('sha256');
      for await (const chunk of r.Body as Readable) h.update(chunk as Buffer);
      verifyDigest(digest, `sha256:${h.digest('hex')}` as Digest);
    }
    const created = await this.backend.publish(digest, this.size, undefined, this.#key, reuse);
    await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: this.#key }));
    return created;
  }

  /** Drops buffers, waits for parts in flight, aborts the multipart upload, deletes the session object. */
  async #discard(): Promise<void> {
    this.#closed = true;
    this.#buf = undefined;
    this.hash.discard();
    while (this.#inflight.size) await Promise.race(this.#inflight);
    const uploadId = this.#uploadId;
    this.#uploadId = undefined;
    try {
      const id = uploadId && await uploadId.catch(() => undefined);
      if (id) await this.backend.abortUpload(this.#key, id);
      await this.backend.client.send(new DeleteObjectCommand({ Bucket: this.backend.bucket, Key: this.#key }));
    } finally {
      this.release();
    }
  }

  async abort(): Promise<void> {
    await this.#discard();
  }
}

function sha256Of(bytes: Buffer): Digest {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}` as Digest;
}
