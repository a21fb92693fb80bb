/**
 * The S3 blob backend (contract.ts) with @aws-sdk/client-s3, for AWS S3, Ceph RADOS Gateway,
 * MinIO or any S3-compatible store. Keys: `<prefix>blobs/sha256/<2 hex>/<hex>` for committed
 * blobs, `<prefix>uploads/<node>/<id>/data` for a session's multipart upload, where `<node>` is
 * the name of the node that owns the session (`S3BackendOptions.node`, engine/blobs/node-name.ts),
 * so that nodes sharing one bucket and prefix each find their own sessions (`sessions()` reports
 * the node of each). Builds before node names used `<prefix>uploads/<id>/data`: such sessions are
 * still listed (node `''`) and aborted (`abortSession(id, '')`), never created.
 *
 * Upload sessions (s3-writer.ts): appends of any size are copied into part buffers of `partSize`
 * bytes (≥ 5 MiB, S3's minimum for all parts but the last) while the sha256 is computed. A
 * session of at most `putLimit` bytes keeps them all and sends nothing until its commit; past
 * that (or when the upload memory budget has no further part buffer for it) each full buffer
 * becomes an UploadPart of a multipart upload, at most `uploadConcurrency` in flight, so a
 * session holds at most `partSize` × (`uploadConcurrency` + 1) bytes (with the default
 * `putLimit`), taken from the upload memory budget (s3-writer.ts "Memory").
 * @aws-sdk/lib-storage's Upload is not used: it takes a whole stream per upload, while a session
 * receives its bytes over many requests and must be committed or aborted explicitly.
 *
 * Session writers live across PATCHes (`suspend` keeps the multipart state and part buffers in
 * memory); bytes come through `append` or `write` with the hash fed beside (`feedHash`).
 *
 * Commit (s3-publish.ts): the running digest is compared with the client's before anything
 * becomes visible under `blobs/` (a mismatch aborts the multipart upload, if any). Then, inside
 * the digest lock and after one HeadObject of the final key (dedupe), a kept session is one
 * PutObject under the final key, and a multipart one is completed under its session key and
 * copied server-side to the final key (the digest, so the key, is only known once the last byte
 * arrived, and S3 has no rename; RGW's copy within a bucket shares the data); its session object
 * is deleted after the answer. Every body Slipway sends is signed with its sha256, which the
 * store checks (s3-client.ts `signedPayload`): the PutObject with the verified digest itself,
 * each UploadPart with a hash taken on the hash thread (`payloadHash`). The completed object is
 * exactly the parts sent (each part's Content-Length and signed payload, the completion naming
 * every part's ETag), so its size is not read back.
 *
 * Pulls: `open` issues one GetObject (from the caller's first byte) and takes the size from its
 * answer; the reader's `stream` hands that body to the sender, which passes each chunk to the
 * socket as it comes (s3-read.ts).
 *
 * When the hash state was lost (the hash thread died), the session's bytes are read back and
 * re-hashed before the comparison.
 *
 * Versions: each commit stores a random `x-amz-meta-slipway-commit` with the object, which
 * `stat` reports as the blob's version (the ETag of identical bytes would not tell a
 * replacement from the copy GC saw); objects without it fall back to the ETag.
 *
 * Immutability: the final key is checked (HeadObject) before it is written (reused when the
 * caller's `reuse` agrees, replaced otherwise) and commits of one digest are serialised within
 * the process; the store's writes of a key are atomic, so a
 * concurrent commit of the same digest on another node can at worst rewrite identical,
 * verified bytes. RGW 16 needs `forcePathStyle`, and checksums `WHEN_REQUIRED` (it has no
 * aws-chunked trailers): see `s3ClientConfig` (s3-client.ts).
 */
import {
  S3Client, HeadObjectCommand, GetObjectCommand, DeleteObjectCommand, ListObjectsV2Command,
  AbortMultipartUploadCommand, ListMultipartUploadsCommand, type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import { fail } from '../errors.js';
import { sequentialReader, storeUnavailable, translateUnavailability } from './s3-read.js';
import { Agent, request as undiciRequest } from 'undici';
import { text as streamText } from 'node:stream/consumers';
import { RawGetClient } from './s3-get.js';
import type { Digest } from '../digest.js';
import { blobKey, digestOfKey, isSessionId, type BlobBackend, type BlobReader, type BlobStat, type BlobWriter, type ByteRange, type SessionInfo } from './contract.js';
import { checkSessionId, resolveRange, DigestLocks } from './backend-common.js';
import type { BlobBackendSpec } from './backend-spec.js';
import { S3Writer } from './s3-writer.js';
import { inlineHash, type HashFactory } from './running-hash.js';
import { isNodeName } from './node-name.js';
import { unlimitedMemory, type UploadMemory } from './upload-memory.js';
import { isNotFound, s3ClientConfig, translateLostSessions } from './s3-client.js';
import { COMMIT_META, publishBlob, type PublishSource } from './s3-publish.js';
import { recycleShared, sharedBuffer, sharedPooled } from './aligned-buffer.js';

export { s3ClientConfig } from './s3-client.js';

/** S3's smallest part (all but the last): 5 MiB. */
export const MIN_PART_SIZE = 5 * 1024 * 1024;

/** Options of the S3 backend. */
export interface S3BackendOptions {
  /** A client, or the settings to make one (merged over `s3ClientConfig` defaults). */
  client: S3Client | S3ClientConfig;
  bucket: string;
  /** Key prefix, '' or ending in '/' (default ''). */
  prefix?: string;
  /** Bytes per multipart part, ≥ 5 MiB (default 8 MiB). */
  partSize?: number;
  /** Parts uploaded at once per session (default 4). */
  uploadConcurrency?: number;
  /**
   * Largest session (bytes) kept whole in memory and sent as one PutObject at commit instead of
   * a multipart upload; at least `partSize` (default `partSize` × `uploadConcurrency`, what one
   * session may hold in part buffers anyway: s3-writer.ts "Memory").
   */
  putLimit?: number;
  /** Running sha256 of new sessions (default: node:crypto on the calling thread). */
  newHash?: HashFactory;
  /**
   * Name of the node whose sessions this instance creates (node-name.ts), the `<node>` of their
   * keys. Default `''`: the layout without a node segment (single-node tools and tests).
   */
  node?: string;
}

/** Blob bytes in an S3 bucket. */
export class S3BlobBackend implements BlobBackend {
  readonly kind = 's3';
  readonly client: S3Client;
  readonly bucket: string;
  readonly prefix: string;
  readonly partSize: number;
  readonly uploadConcurrency: number;
  /** Largest session sent as one PutObject (bytes; `S3BackendOptions.putLimit`). */
  readonly putLimit: number;
  /** The node whose sessions this instance creates (`''`: no node segment). */
  readonly node: string;
  readonly #newHash: HashFactory;
  readonly #locks = new DigestLocks();
  readonly #live = new Set<string>();
  /** Connections of the blob GETs (`#get`), bounded by the client's request timeout. */
  readonly #http: Agent;
  /** Connections of the blob GETs over http (`#get`). */
  readonly #raw: RawGetClient;
  /** What a worker thread needs to open the same backend; undefined when built on a client instance. */
  readonly spec: BlobBackendSpec | undefined;

  /** @throws Error naming the option when `partSize`, `uploadConcurrency`, `putLimit` or `prefix` is invalid. */
  constructor(opts: S3BackendOptions) {
    this.client = opts.client instanceof S3Client ? opts.client : new S3Client(s3ClientConfig(opts.client));
    translateUnavailability(this.client);
    translateLostSessions(this.client);
    this.bucket = opts.bucket;
    this.prefix = opts.prefix ?? '';
    this.partSize = opts.partSize ?? 8 * 1024 * 1024;
    this.uploadConcurrency = opts.uploadConcurrency ?? 4;
    this.putLimit = opts.putLimit ?? this.partSize * this.uploadConcurrency;
    this.#newHash = opts.newHash ?? inlineHash;
    this.node = opts.node ?? '';
    if (this.node !== '' && !isNodeName(this.node)) throw new Error(`node must be a node name (A-Z a-z 0-9 . _ -, at most 63), got "${this.node.slice(0, 80)}"`);
    // The blob GETs' idle bound: the client's socket (idle) timeout, else its request timeout.
    const handler = opts.client instanceof S3Client ? undefined : opts.client.requestHandler as { socketTimeout?: number; requestTimeout?: number } | undefined;
    const ms = handler?.socketTimeout ?? handler?.requestTimeout ?? 30_000;
    this.#http = new Agent({ connectTimeout: Math.min(ms, 5000), headersTimeout: ms, bodyTimeout: ms });
    this.#raw = new RawGetClient(ms);
    if (!Number.isSafeInteger(this.partSize) || this.partSize < MIN_PART_SIZE) throw new Error(`partSize must be an integer ≥ ${MIN_PART_SIZE} bytes, got ${opts.partSize}`);
    if (!Number.isSafeInteger(this.uploadConcurrency) || this.uploadConcurrency < 1) throw new Error(`uploadConcurrency must be ≥ 1, got ${opts.uploadConcurrency}`);
    if (!Number.isSafeInteger(this.putLimit) || this.putLimit < this.partSize) throw new Error(`putLimit must be an integer ≥ partSize (${this.partSize} bytes), got ${opts.putLimit}`);
    if (this.prefix !== '' && !this.prefix.endsWith('/')) throw new Error(`prefix must be empty or end with "/", got "${this.prefix}"`);
    this.spec = opts.client instanceof S3Client ? undefined : {
      kind: 's3', client: opts.client, bucket: this.bucket, prefix: this.prefix, partSize: this.partSize, uploadConcurrency: this.uploadConcurrency, putLimit: this.putLimit, node: this.node,
    };
  }

  /**
   * A shared buffer of `partSize` bytes for a session's part (the hash thread reads it without a
   * copy): a recycled one from the process's pool of shared buffers (aligned-buffer.ts), else a
   * new one. Its memory is the caller's to account (s3-writer.ts slots).
   * @internal
   */
  partBuffer(): Buffer {
    return sharedBuffer(this.partSize);
  }

  /** Whether a recycled part buffer is ready for `partBuffer`. @internal */
  get pooledPart(): boolean {
    return sharedPooled(this.partSize);
  }

  /**
   * Gives a part buffer that nothing reads any more (no request, no thread) to the process's pool
   * of shared buffers for any later part: dropped, its shared memory would stay mapped until a
   * major collection (aligned-buffer.ts). Smaller buffers go to the garbage collector.
   * @internal
   */
  recycle(buf: Buffer): void {
    if (buf.length === this.partSize) recycleShared(buf);
  }

  /**
   * The sha256 (hex) of `bytes`, for an UploadPart's signed payload (s3-client.ts
   * `signedPayload`): on the hash thread when the backend's `newHash` runs there and `bytes` is a
   * shared buffer, else on the calling thread. `bytes` must not change until the part is sent.
   * @internal
   */
  async payloadHash(bytes: Buffer): Promise<string> {
    const h = this.#newHash();
    await new Promise<void>((resolve) => h.update(bytes, resolve));
    return (await h.digest()) ?? createHash('sha256').update(bytes).digest('hex');
  }

  /** Full key of a committed blob. */
  keyOf(digest: Digest): string {
    return this.prefix + blobKey(digest);
  }

  /** Full key of a session's multipart upload / completed object (of `node`, default this instance's). */
  sessionKey(id: string, node = this.node): string {
    return `${this.#sessionDir(id, node)}data`;
  }

  /** Key prefix of a session's keys: `<prefix>uploads/<node>/<id>/` (`<prefix>uploads/<id>/` for node `''`). */
  #sessionDir(id: string, node: string): string {
    return `${this.prefix}uploads/${node === '' ? '' : `${node}/`}${id}/`;
  }

  async stat(digest: Digest): Promise<BlobStat | undefined> {
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.keyOf(digest) }));
      const version = r.Metadata?.[COMMIT_META] ?? r.ETag;
      return { digest, size: r.ContentLength ?? 0, ...(version ? { version } : {}), ...(r.LastModified ? { modifiedAt: r.LastModified } : {}) };
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async read(digest: Digest, range?: ByteRange): Promise<Readable> {
    if (range) resolveRange(Number.MAX_SAFE_INTEGER, range); // argument checks only; the store checks the end
    return (await this.#get(digest, range?.offset ?? 0, range?.length === undefined ? undefined : range.offset + range.length)).body;
  }

  /**
   * One GetObject of the bytes from `offset` to `end` (exclusive; the end of the object when
   * undefined), with no Range header for the whole object. The request is signed by the SDK (a
   * presigned URL) and sent, over http, by s3-get.ts's client, whose body chunks are the socket's
   * reads in pooled buffers (the pull path moves every byte through it; it costs a fraction of
   * the SDK's Node HTTP handler or undici per GiB); over https, by undici.
   * @returns the body and the answer's Content-Length and Content-Range
   * @throws BLOB_UNKNOWN; RANGE_NOT_SATISFIABLE when `offset` is at or past the end; UNAVAILABLE
   *   when the store does not answer or answers 5xx.
   */
  async #get(digest: Digest, offset: number, end: number | undefined): Promise<{ body: Readable; length: number; range: string | undefined }> {
    const ranged = offset > 0 || end !== undefined;
    const url = new URL(await getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(digest) }), { expiresIn: 300 }));
    const headers: Record<string, string> = ranged ? { range: `bytes=${offset}-${end === undefined ? '' : end - 1}` } : {};
    let st: number;
    let h: Record<string, string | string[] | undefined>;
    let body: Readable;
    try {
      if (url.protocol === 'http:') ({ status: st, headers: h, body } = await this.#raw.get(url, headers));
      else ({ statusCode: st, headers: h, body } = await undiciRequest(url, { dispatcher: this.#http, headers }));
    } catch (e) {
      throw storeUnavailable(e);
    }
    if (st === (ranged ? 206 : 200)) {
      const range = h['content-range'];
      return { body, length: Number(h['content-length'] ?? 0), range: typeof range === 'string' ? range : undefined };
    }
    const text = await streamText(body).catch(() => '');
    if (st === 404) throw fail('BLOB_UNKNOWN', `blob unknown: ${digest}`, { digest });
    if (st === 416) throw fail('RANGE_NOT_SATISFIABLE', `range starts at byte ${offset}, past the end of ${digest}`);
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? 'Error';
    throw storeUnavailable(Object.assign(new Error(`GetObject answered HTTP ${st}: ${code}`), { name: code, $metadata: { httpStatusCode: st } }));
  }

  /**
   * One GetObject from `first` (default: the whole blob), whose answer gives the object's size
   * (Content-Range, else Content-Length): no HeadObject before the bytes. The reader (s3-read.ts)
   * consumes that body and opens another only for a read elsewhere. A `first` past the object's
   * end (the store holds fewer bytes than the caller expected) falls back to a HeadObject.
   */
  async open(digest: Digest, first?: ByteRange): Promise<BlobReader> {
    const offset = first?.offset ?? 0;
    const end = first?.length === undefined || first.length === 0 ? undefined : offset + first.length;
    const rest = (o: number, e: number) => this.#get(digest, o, e).then((r) => r.body);
    let r: { body: Readable; length: number; range: string | undefined };
    try {
      r = await this.#get(digest, offset, end);
    } catch (e) {
      if ((e as { code?: string }).code !== 'RANGE_NOT_SATISFIABLE') throw e;
      const st = await this.stat(digest);
      if (!st) throw fail('BLOB_UNKNOWN', `blob unknown: ${digest}`, { digest });
      return sequentialReader(digest, st.size, rest);
    }
    const total = /\/(\d+)$/.exec(r.range ?? '');
    const size = total ? Number(total[1]) : r.length;
    return sequentialReader(digest, size, rest, { body: r.body, at: offset, end: offset + r.length });
  }

  async delete(digest: Digest, ifVersion?: string): Promise<boolean> {
    const st = await this.stat(digest);
    if (!st || (ifVersion !== undefined && st.version !== ifVersion)) return false;
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.keyOf(digest) }));
    return true;
  }

  async *list(): AsyncIterable<Digest> {
    const base = this.prefix + 'blobs/sha256/';
    let ContinuationToken: string | undefined;
    do {
      const r = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: base, ContinuationToken }));
      for (const o of r.Contents ?? []) {
        const d = o.Key && digestOfKey(o.Key.slice(this.prefix.length));
        if (d) yield d;
      }
      ContinuationToken = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  /** A session writer whose part buffers are taken from `memory` (default: no limit). */
  async create(id: string, memory: UploadMemory = unlimitedMemory()): Promise<BlobWriter> {
    checkSessionId(id);
    if (this.#live.has(id)) throw fail('BLOB_UPLOAD_INVALID', `upload session ${id} already exists`);
    this.#live.add(id);
    return new S3Writer(this, id, this.#newHash(), () => this.#live.delete(id), memory);
  }

  /** Never: the hash state and the unflushed part lived only in the crashed process. */
  async resume(id: string, _size?: number): Promise<BlobWriter | undefined> {
    checkSessionId(id);
    return undefined;
  }

  /** Multipart uploads under `uploads/` for session `id` of `node` (all of them when `id` is undefined). */
  async *#multipartUploads(id?: string, node = this.node): AsyncIterable<{ key: string; uploadId: string; initiated: Date }> {
    const Prefix = id === undefined ? `${this.prefix}uploads/` : this.#sessionDir(id, node);
    let KeyMarker: string | undefined;
    let UploadIdMarker: string | undefined;
    for (;;) {
      const r = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix, KeyMarker, UploadIdMarker }));
      for (const u of r.Uploads ?? []) {
        if (u.Key && u.UploadId) yield { key: u.Key, uploadId: u.UploadId, initiated: u.Initiated ?? new Date(0) };
      }
      if (!r.IsTruncated) return;
      KeyMarker = r.NextKeyMarker;
      UploadIdMarker = r.NextUploadIdMarker;
    }
  }

  /**
   * Every session under `<prefix>uploads/`, of every node (`SessionInfo.node`: the key's node
   * segment, `''` for the layout without one): the caller picks its own.
   */
  async *sessions(): AsyncIterable<SessionInfo> {
    const seen = new Map<string, { id: string; node: string; startedAt: Date }>();
    const base = `${this.prefix}uploads/`;
    const note = (key: string, at: Date) => {
      const parts = key.slice(base.length).split('/');
      const [node, id] = parts.length === 3 ? [parts[0]!, parts[1]!] : parts.length === 2 ? ['', parts[0]!] : ['', ''];
      if (!isSessionId(id) || (node !== '' && !isNodeName(node))) return;
      const prev = seen.get(`${node}/${id}`);
      if (!prev || at < prev.startedAt) seen.set(`${node}/${id}`, { id, node, startedAt: at });
    };
    for await (const u of this.#multipartUploads()) note(u.key, u.initiated);
    // A session completed but not yet copied when the process died leaves an object.
    let ContinuationToken: string | undefined;
    do {
      const r = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: base, ContinuationToken }));
      for (const o of r.Contents ?? []) if (o.Key) note(o.Key, o.LastModified ?? new Date(0));
      ContinuationToken = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (ContinuationToken);
    yield* seen.values();
  }

  /** Aborts session `id` of `node` (default this instance's; `''` the layout without a node segment). */
  async abortSession(id: string, node = this.node): Promise<void> {
    checkSessionId(id);
    if (node !== '' && !isNodeName(node)) throw new Error(`not a node name: "${node.slice(0, 80)}"`);
    for await (const u of this.#multipartUploads(id, node)) {
      await this.#abortUpload(u.key, u.uploadId);
    }
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.sessionKey(id, node) }));
  }

  async presignedUrl(digest: Digest, expiresInSeconds: number): Promise<string | undefined> {
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(digest) }), { expiresIn: expiresInSeconds });
  }

  /** @internal */
  async abortUpload(key: string, uploadId: string): Promise<void> {
    await this.#abortUpload(key, uploadId);
  }

  async #abortUpload(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }));
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /**
   * Makes verified bytes visible under `digest`, inside the digest lock (s3-publish.ts): false
   * when a committed copy was reused.
   * @internal used by S3Writer.commit.
   */
  publish(digest: Digest, size: number, source: PublishSource, reuse: (existing: BlobStat) => boolean | Promise<boolean>): Promise<boolean> {
    return this.#locks.with(digest, () => publishBlob(this, digest, size, source, reuse));
  }
}
