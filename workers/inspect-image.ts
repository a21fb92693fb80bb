/**
 * Worker tasks: read an image config, and scan one layer tar for whiteouts (docs/rules.md What
 * the service does 8: whiteout files are not honoured) within hard limits (inflated bytes,
 * entries, wall time: engine/registry/inspect-limits.ts). Run in the Piscina pool so gunzip never
 * blocks requests; one task per layer, so the pool's fair queue (workers/fair-queue.ts) can
 * interleave accounts between layers.
 * Bytes are read by digest through the blob contract: the task carries the server backend's
 * description (engine/blobs/backend-spec.ts) and the thread opens its own instance of it once.
 * Layers are streamed (gunzip → tar headers, file bodies skipped), never held in memory.
 */
import { createGunzip } from 'node:zlib';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import type { ConfigSummary } from '../engine/registry/image-info.js';
import type { LayerScan } from '../engine/blobs/records.js';
import { limitReason, type InspectLimits } from '../engine/registry/inspect-limits.js';
import type { BlobBackend } from '../engine/blobs/contract.js';
import { openBlobBackend, type BlobBackendSpec } from '../engine/blobs/backend-spec.js';
import type { Digest } from '../engine/digest.js';
import { fail, isSlipwayError } from '../engine/errors.js';

/** Reads an image config (`config`) from the backend `blobs` describes. */
export interface ConfigTask {
  blobs: BlobBackendSpec;
  config: Digest;
}

/** Scans one layer (`digest`) from the backend `blobs` describes, within `limits`. */
export interface LayerTask {
  blobs: BlobBackendSpec;
  digest: Digest;
  limits: InspectLimits;
}

/**
 * Worker results never throw across threads: a clone would lose the error code. BLOB_UNKNOWN
 * names the blob (`digest`) that was not stored when the worker read it (GC took it meanwhile);
 * BLOB_STORE_UNAVAILABLE says the blob store could not be read (the manifest is not at fault:
 * the client gets 503 and sends it again, not MANIFEST_INVALID).
 */
export type TaskResult<T> = { ok: true; value: T } | { ok: false; code: 'MANIFEST_INVALID'; message: string } | { ok: false; code: 'BLOB_UNKNOWN'; message: string; digest: Digest }
  | { ok: false; code: 'BLOB_STORE_UNAVAILABLE'; message: string; retryAfter: number };

/** Largest config blob read (bytes). */
const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

/** This thread's backends, by description (one per server backend, opened on first use). */
const backends = new Map<string, Promise<BlobBackend>>();

function backendOf(spec: BlobBackendSpec): Promise<BlobBackend> {
  const k = JSON.stringify(spec);
  let b = backends.get(k);
  if (!b) backends.set(k, (b = openBlobBackend(spec)));
  return b;
}

/** Task `readImageConfig`: the config fields of an image, or why they cannot be read. */
export async function readImageConfig(task: ConfigTask): Promise<TaskResult<ConfigSummary>> {
  try {
    return { ok: true, value: await readConfig(await backendOf(task.blobs), task.config) };
  } catch (e) {
    return missingBlob(e, task.config) ?? { ok: false, code: 'MANIFEST_INVALID', message: (e as Error).message };
  }
}

/**
 * Task `scanLayer`: one layer's scan (an unreadable layer is a scan with `readable: false`, one
 * stopped at a limit a scan with `unscanned`), or BLOB_UNKNOWN when the blob is not stored.
 * @throws what the backend throws otherwise (storage failures).
 */
export async function scanLayerTask(task: LayerTask): Promise<TaskResult<LayerScan>> {
  try {
    return { ok: true, value: await scanLayer(await backendOf(task.blobs), task.digest, task.limits) };
  } catch (e) {
    const missing = missingBlob(e, task.digest);
    if (missing) return missing;
    throw e;
  }
}

/**
 * The BLOB_UNKNOWN result for `e` when it is the blob contract's "absent" (contract.ts `read`),
 * the BLOB_STORE_UNAVAILABLE one when the store could not be read.
 */
function missingBlob(e: unknown, digest: Digest): TaskResult<never> | undefined {
  if (isSlipwayError(e) && e.code === 'BLOB_STORE_UNAVAILABLE') {
    return { ok: false, code: e.code, message: e.message, retryAfter: (e.detail as { retryAfter?: number } | undefined)?.retryAfter ?? 5 };
  }
  return isSlipwayError(e) && e.code === 'BLOB_UNKNOWN' ? { ok: false, code: 'BLOB_UNKNOWN', message: e.message, digest } : undefined;
}

async function readAll(s: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

async function readConfig(blobs: BlobBackend, digest: Digest): Promise<ConfigSummary> {
  const st = await blobs.stat(digest);
  if (!st) throw fail('BLOB_UNKNOWN', `image config ${digest} is not stored`, { digest });
  if (st.size > MAX_CONFIG_BYTES) throw new Error(`image config is ${st.size} bytes; the limit is ${MAX_CONFIG_BYTES}`);
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse((await readAll(await blobs.read(digest))).toString('utf8'));
  } catch (e) {
    if (isSlipwayError(e)) throw e; // the store, not the config
    throw new Error(`image config is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null) throw new Error('image config must be a JSON object');
  const c = (typeof doc.config === 'object' && doc.config !== null ? doc.config : {}) as Record<string, unknown>;
  const strings = (v: unknown): string[] | null => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : null);
  const present = (v: unknown) => v !== undefined && v !== null && !(typeof v === 'object' && Object.keys(v as object).length === 0) && v !== '';
  const ignored: string[] = [];
  if (present(c.Volumes)) ignored.push('VOLUME');
  if (present(c.ExposedPorts)) ignored.push('EXPOSE');
  if (present(c.StopSignal)) ignored.push('STOPSIGNAL');
  if (present(c.Shell)) ignored.push('SHELL');
  if (present(c.Healthcheck)) ignored.push('HEALTHCHECK');
  return {
    architecture: typeof doc.architecture === 'string' ? doc.architecture : '',
    os: typeof doc.os === 'string' ? doc.os : '',
    entrypoint: strings(c.Entrypoint),
    cmd: strings(c.Cmd),
    workingDir: typeof c.WorkingDir === 'string' ? c.WorkingDir : '',
    env: strings(c.Env) ?? [],
    user: typeof c.User === 'string' ? c.User : '',
    ignoredInstructions: ignored,
  };
}

/** The first bytes of `source` (up to `n`), and a stream of all its bytes (the first included). */
async function peek(source: Readable, n: number): Promise<{ head: Buffer; stream: Readable }> {
  const it = source[Symbol.asyncIterator]();
  const first = await it.next();
  const head = first.done ? Buffer.alloc(0) : (first.value as Buffer);
  async function* all() {
    if (head.length > 0) yield head;
    for (let r = await it.next(); !r.done; r = await it.next()) yield r.value as Buffer;
  }
  return { head: head.subarray(0, n), stream: Readable.from(all(), { objectMode: false }) };
}

/** Bytes of each chunk gunzip hands on (zlib's default is 16 KiB; larger chunks cost fewer stream hops per byte). */
const INFLATE_CHUNK = 256 * 1024;

/**
 * Counts whiteout entries (`.wh.` basenames) in a gzip-compressed or plain tar layer blob,
 * stopping at the first of `limits` reached (inflated bytes counted as gunzip hands them on,
 * entries as their headers are read, wall time by a timer and at every entry): the stream is
 * torn down mid-way and the scan so far comes back with `unscanned` naming the limit.
 * @throws BLOB_UNKNOWN when the blob is not stored (the blob contract's `read`).
 */
export async function scanLayer(blobs: BlobBackend, digest: Digest, limits: InspectLimits): Promise<LayerScan> {
  const scan: LayerScan = { whiteouts: 0, examples: [], readable: true };
  const extract = tar.extract();
  let stopped: 'bytes' | 'entries' | 'time' | undefined;
  const stop = (why: 'bytes' | 'entries' | 'time') => {
    if (stopped) return;
    stopped = why;
    extract.destroy(new Error(`layer scan stopped: ${why}`));
  };
  const deadline = performance.now() + limits.maxSeconds * 1000;
  const timer = setTimeout(() => stop('time'), limits.maxSeconds * 1000);
  let file: Readable | undefined;
  let source: Readable | undefined;
  const raw = await blobs.read(digest).catch((e: unknown) => { clearTimeout(timer); throw e; }); // absent: BLOB_UNKNOWN
  try {
    const { head, stream } = await peek(raw, 2);
    file = stream;
    const gz = head[0] === 0x1f && head[1] === 0x8b;
    source = gz ? file.pipe(createGunzip({ chunkSize: INFLATE_CHUNK })) : file;
    file.on('error', (e) => extract.destroy(e));
    source.on('error', (e: Error) => extract.destroy(e));
    let inflated = 0;
    source.on('data', (c: Buffer) => {
      inflated += c.length;
      if (inflated > limits.maxInflatedBytes) stop('bytes');
    });
    source.pipe(extract);
    let entries = 0;
    for await (const entry of extract) {
      if (++entries > limits.maxEntries) stop('entries');
      else if (performance.now() > deadline) stop('time');
      if (stopped) break;
      const base = entry.header.name.split('/').filter(Boolean).pop() ?? '';
      if (base.startsWith('.wh.')) {
        scan.whiteouts++;
        if (scan.examples.length < 5) scan.examples.push(entry.header.name);
      }
      entry.resume();
    }
  } catch {
    if (!stopped) return { whiteouts: scan.whiteouts, examples: scan.examples, readable: false };
  } finally {
    clearTimeout(timer);
    source?.destroy();
    (file ?? raw).destroy();
    raw.destroy();
  }
  return stopped ? { ...scan, unscanned: limitReason(stopped, limits) } : scan;
}
