/**
 * The S3 backend's upload session writer (s3-backend.ts documents the keys, s3-publish.ts the
 * commit). Appended or written bytes are copied into part buffers of `partSize` bytes. While the
 * session has at most `putLimit` bytes (default `partSize` × `uploadConcurrency`), its full part
 * buffers are kept (`#held`) and nothing is sent: at commit the whole session is one PutObject
 * under the final key, signed with the verified digest (2 requests with the HeadObject, against
 * 7 for a multipart session: create, parts, complete, HeadObject, copy, delete; and no second
 * sha256 of the bytes). A session that grows past `putLimit`, or needs memory while the budget
 * has none, sends what it holds and goes on as a multipart upload: each full buffer becomes an
 * UploadPart, with at most `uploadConcurrency` parts in flight (more only for the moment the held
 * ones leave together, when `putLimit` is larger than that). Each UploadPart is signed with its
 * sha256 computed on the hash thread (`S3BlobBackend.payloadHash`) instead of by the SDK on the
 * event loop; the store checks it against the bytes it receives. Between requests (`suspend`)
 * the writer keeps its multipart state and part buffers in memory: a session cannot outlive the
 * process.
 *
 * Memory: the writer takes its part buffers from the global upload budget (`UploadMemory`,
 * SLIPWAY_UPLOAD_MEMORY) in slots of `partSize` bytes, one per buffer filling, held, spare or in flight.
 * A session takes its first slot when an append begins (`reserve`; the upload engine answers
 * 503 with Retry-After when the budget cannot give it, before any byte is accepted) and keeps at
 * least one slot until it ends, also between PATCHes, because its bytes not yet uploaded live in
 * it. Part buffers leave `PART_HEADROOM` of the budget to the transports' receive buffers
 * (writer.ts). When a full part goes out and no slot is free, the writer takes another when the
 * budget allows, else waits for one of its own parts in flight and reuses its slot: it never waits
 * on another session, so sessions cannot deadlock each other, and every session that got its
 * first slot can finish (a session keeping parts for one PutObject sends them first, so it too
 * has parts in flight to wait for). The buffer of a first slot grows (64 KiB, fourfold, copied) up to
 * `partSize` as bytes arrive, so a small blob's memory is what it received, although its slot is
 * counted whole. Full-size buffers are shared memory (the hash thread reads them for the part's
 * signed hash); those no request uses any more go back to the process's pool of shared buffers
 * (`S3BlobBackend.recycle`, aligned-buffer.ts) instead of to the garbage collector.
 */
import {
  GetObjectCommand, DeleteObjectCommand, CreateMultipartUploadCommand, UploadPartCommand,
  CompleteMultipartUploadCommand, type CompletedPart,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import { fail, isSlipwayError } from '../errors.js';
import type { Digest } from '../digest.js';
import type { BlobStat, BlobWriter, CommitOptions, CommitResult } from './contract.js';
import { appendHashed, verifyDigest } from './backend-common.js';
import type { RunningHash } from './running-hash.js';
import type { S3BlobBackend } from './s3-backend.js';
import type { UploadMemory } from './upload-memory.js';
import { signedPayload } from './s3-client.js';
import { PART_HEADROOM } from './s3-budget.js';

const reuseAlways = () => true;

/** Bytes of a session's first part buffer; each growth makes it four times larger, up to the part size. */
const FIRST_BUFFER_BYTES = 64 * 1024;

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
  /** Full part buffers not sent yet: the session may still be one PutObject (each fills a slot). */
  readonly #held: Buffer[] = [];
  /** Full-size buffers of stored parts kept for reuse (each fills one of the writer's slots). */
  readonly #spare: Buffer[] = [];
  /** Slots of `partSize` bytes taken from the budget: the filling buffer, held parts, spares, parts in flight, free ones. */
  #slots = 0;
  #waitingForSlot = false;

  /**
   * @param memory the global upload buffer budget every part buffer is taken from
   * @param release called once when the session ends (committed or discarded)
   */
  constructor(readonly backend: S3BlobBackend, readonly id: string, readonly hash: RunningHash, readonly release: () => void, readonly memory: UploadMemory) {
    this.#key = backend.sessionKey(id);
  }

  /** Slots not used by the filling buffer, a held part, a spare or a part in flight. */
  get #freeSlots(): number {
    return this.#slots - (this.#buf ? 1 : 0) - this.#held.length - this.#spare.length - this.#inflight.size;
  }

  /** Takes one slot when the budget has it beside the headroom. */
  #takeSlot(): boolean {
    const partSize = this.backend.partSize;
    if (!this.memory.canTake(partSize + PART_HEADROOM) || !this.memory.tryTake(partSize)) return false;
    this.#slots++;
    return true;
  }

  /**
   * Makes sure the session holds a slot for the bytes of the append about to begin (the upload
   * engine calls it before accepting any byte). False when it holds none and the budget cannot
   * give one: the append is refused (503) and the session stays as it was.
   */
  reserve(): boolean {
    return this.#closed || this.#slots > 0 || this.#takeSlot();
  }

  /**
   * Makes the filling buffer hold at least `want` bytes (at most `partSize`): grows the first
   * buffer within its slot, else uses a spare or a free slot, takes a slot, or (sending the held
   * parts first when there are any) waits for one of this session's parts in flight to free its
   * slot.
   * @throws UNAVAILABLE when the session holds no slot and the budget cannot give one
   */
  async #room(want: number): Promise<void> {
    const partSize = this.backend.partSize;
    for (;;) {
      this.#check();
      const old = this.#buf;
      if (old) {
        if (old.length >= want) return;
        let size = old.length * 4; // grows within its slot
        while (size < want) size *= 4;
        const next = size >= partSize ? this.backend.partBuffer() : Buffer.allocUnsafeSlow(size);
        old.copy(next, 0, 0, this.#fill);
        this.#buf = next;
        return;
      }
      const spare = this.#spare.pop();
      if (spare) {
        this.#buf = spare;
        return;
      }
      if (this.#freeSlots > 0 || this.#takeSlot()) {
        let size = this.#parts.length > 0 || this.#held.length > 0 || this.backend.pooledPart ? partSize : FIRST_BUFFER_BYTES;
        while (size < want) size *= 4;
        this.#buf = size >= partSize ? this.backend.partBuffer() : Buffer.allocUnsafeSlow(size);
        return;
      }
      if (this.#held.length > 0) {
        this.#spill(); // the budget is short: send the held parts rather than wait for memory
        continue;
      }
      if (this.#inflight.size === 0) {
        throw fail('UNAVAILABLE', 'the registry is buffering as many upload bytes as it can; retry shortly', { retryAfter: 2 });
      }
      this.#waitingForSlot = true;
      try {
        await Promise.race(this.#inflight);
      } finally {
        this.#waitingForSlot = false;
      }
    }
  }

  /**
   * A stored (or failed) part's slot: kept (its buffer as a spare) while the session is open and
   * would otherwise hold no slot, or a write waits for one; else given back to the budget.
   */
  #partDone(buf: Buffer): void {
    const lastSlot = this.#slots - this.#inflight.size === 0; // this part's own slot is still counted in flight
    if (!this.#closed && (this.#waitingForSlot || lastSlot)) {
      if (buf.length === this.backend.partSize) this.#spare.push(buf);
      return;
    }
    this.#slots--;
    this.memory.give(this.backend.partSize);
    this.backend.recycle(buf);
  }

  /** Gives back every slot not held by a part in flight (those are given back when done). */
  #dropBuffers(): void {
    if (this.#buf) this.backend.recycle(this.#buf);
    for (const b of this.#spare) this.backend.recycle(b);
    for (const b of this.#held) this.backend.recycle(b);
    this.#buf = undefined;
    this.#fill = 0;
    this.#spare.length = 0;
    this.#held.length = 0;
    const free = this.#slots - this.#inflight.size;
    this.#slots -= free;
    if (free > 0) this.memory.give(free * this.backend.partSize);
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

  /** Starts uploading the current buffer as the next part (after the held ones). */
  #flush(): void {
    this.#spill();
    const buf = this.#buf!;
    const fill = this.#fill;
    this.#buf = undefined;
    this.#fill = 0;
    this.#send(buf, fill);
  }

  /** Starts uploading the held parts, in order: the session becomes a multipart upload. */
  #spill(): void {
    for (const buf of this.#held.splice(0)) this.#send(buf, buf.length);
  }

  /**
   * Uploads `buf[0, fill)` as the next part: its sha256 (hash thread) signs the UploadPart, so
   * the store refuses the part unless it received exactly these bytes; `buf` is not touched
   * until the part is done (`#partDone`).
   */
  #send(buf: Buffer, fill: number): void {
    const body = fill === buf.length ? buf : buf.subarray(0, fill);
    const PartNumber = this.#parts.length + 1;
    const entry: CompletedPart = { PartNumber };
    this.#parts.push(entry);
    const p = (async () => {
      const [UploadId, sha256] = await Promise.all([this.#multipart(), this.backend.payloadHash(body)]);
      const r = await this.backend.client.send(signedPayload(new UploadPartCommand({
        Bucket: this.backend.bucket, Key: this.#key, UploadId, PartNumber, Body: body, ContentLength: body.length,
      }), sha256));
      entry.ETag = r.ETag;
    })().catch((e) => { this.#error ??= e; }).finally(() => this.#partDone(buf));
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
    const { putLimit } = this.backend;
    for (const bytes of chunks) {
      let at = 0;
      while (at < bytes.byteLength) {
        if (this.#held.length > 0 && this.size >= putLimit) this.#spill(); // more than one PutObject takes
        const want = Math.min(partSize, this.#fill + bytes.byteLength - at);
        if (!this.#buf || this.#buf.length < want) await this.#room(want);
        const buf = this.#buf!;
        const n = Math.min(buf.length - this.#fill, bytes.byteLength - at);
        buf.set(bytes.subarray(at, at + n), this.#fill);
        this.#fill += n;
        at += n;
        this.size += n;
        if (this.#fill === partSize) {
          if (this.#parts.length === 0 && this.size <= putLimit) {
            this.#held.push(buf); // may still be one PutObject
            this.#buf = undefined;
            this.#fill = 0;
            continue;
          }
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

  /** The parts in flight are stored; held parts and the part being filled stay in memory. */
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
      if (this.#parts.length === 0) {
        const bodies = this.#fill > 0 ? [...this.#held, this.#buf!.subarray(0, this.#fill)] : [...this.#held];
        const held = bodies.reduce((n, b) => n + b.length, 0);
        if (held !== this.size) throw new Error(`upload session ${this.id}: ${held} bytes held, ${this.size} written`);
        const actual = hex !== null ? (`sha256:${hex}` as Digest) : sha256Of(bodies);
        verifyDigest(expected, actual);
        created = await this.backend.publish(actual, this.size, bodies, reuse);
        this.#dropBuffers();
      } else {
        if (hex !== null) verifyDigest(expected, `sha256:${hex}` as Digest);
        if (this.#fill > 0) this.#flush();
        this.#dropBuffers();
        while (this.#inflight.size) await Promise.race(this.#inflight);
        if (this.#error) throw this.#error;
        created = await this.#completeAndPublish(expected, hex === null, reuse);
      }
      this.release();
      return { digest: expected, size: this.size, created };
    } catch (e) {
      // The commit's error is the answer: the cleanup's own failure (the store still away) does
      // not replace it, and is not waited for when the store is away (Uploads.reapOrphans
      // removes what it leaves).
      const cleanup = this.#discard().catch(() => {});
      if (!(isSlipwayError(e) && e.code === 'BLOB_STORE_UNAVAILABLE')) await cleanup;
      throw e;
    }
  }

  /**
   * Publishes the multipart upload under the digest: inside the digest lock, one HeadObject of
   * the final key (dedupe), then CompleteMultipartUpload under the session key and the copy;
   * the session object is deleted after the answer (in the background: a leftover is removed
   * by start-up recovery, `sessions()` lists it). When the hash state was lost, the upload is
   * completed first and its bytes are read back and re-hashed before anything is published.
   * The completed object's size is the sum of the parts' sizes: each UploadPart's body is
   * bounded by its Content-Length and covered by the request signature (over https by TLS),
   * and the completion names every part by its ETag, so no HeadObject re-reads it.
   */
  async #completeAndPublish(digest: Digest, rehash: boolean, reuse: (existing: BlobStat) => boolean | Promise<boolean>): Promise<boolean> {
    const { client, bucket } = this.backend;
    let completed: Promise<void> | undefined;
    const complete = () => (completed ??= (async () => {
      const UploadId = await this.#multipart();
      await client.send(new CompleteMultipartUploadCommand({
        Bucket: bucket, Key: this.#key, UploadId, MultipartUpload: { Parts: this.#parts },
      }));
      this.#uploadId = undefined;
    })());
    if (rehash) {
      await complete();
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: this.#key }));
      const h = createHash('sha256');
      let n = 0;
      for await (const chunk of r.Body as Readable) {
        h.update(chunk as Buffer);
        n += (chunk as Buffer).length;
      }
      if (n !== this.size) throw fail('BLOB_UPLOAD_INVALID', `upload session ${this.id}: the store holds ${n} bytes, ${this.size} were sent`);
      verifyDigest(digest, `sha256:${h.digest('hex')}` as Digest);
    }
    const created = await this.backend.publish(digest, this.size, { key: this.#key, complete }, reuse);
    if (!created) {
      await this.#discard(); // dedupe: the committed copy stays, the upload is aborted
      return false;
    }
    client.send(new DeleteObjectCommand({ Bucket: bucket, Key: this.#key })).catch(() => {});
    return true;
  }

  /** Drops buffers, waits for parts in flight, aborts the multipart upload, deletes the session object. */
  async #discard(): Promise<void> {
    this.#closed = true;
    this.#dropBuffers();
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

function sha256Of(bodies: readonly Buffer[]): Digest {
  const h = createHash('sha256');
  for (const b of bodies) h.update(b);
  return `sha256:${h.digest('hex')}` as Digest;
}
