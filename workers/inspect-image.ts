/**
 * Worker task: reads an image config and scans layer tars for whiteouts (docs/rules.md What the service does 6:
 * whiteout files are not honoured). Runs in the Piscina pool so gunzip never blocks requests.
 * Bytes are read by digest through the blob contract: the task carries the server backend's
 * description (engine/blobs/backend-spec.ts) and the thread opens its own instance of it once.
 * Layers are streamed (gunzip → tar headers, file bodies skipped), never held in memory.
 */
import { createGunzip } from 'node:zlib';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import type { ConfigSummary } from '../engine/registry/image-info.js';
import type { LayerScan } from '../engine/blobs/records.js';
import type { InspectRequest, InspectResult } from '../engine/registry/registry.js';
import type { BlobBackend } from '../engine/blobs/contract.js';
import { openBlobBackend, type BlobBackendSpec } from '../engine/blobs/backend-spec.js';
import type { Digest } from '../engine/digest.js';
import { fail, isSlipwayError } from '../engine/errors.js';

/** An InspectRequest with the backend holding its blobs. */
export interface InspectTask extends InspectRequest {
  blobs: BlobBackendSpec;
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

export async function inspectImage(task: InspectTask): Promise<TaskResult<InspectResult>> {
  const blobs = await backendOf(task.blobs);
  let config: ConfigSummary;
  try {
    config = await readConfig(blobs, task.config);
  } catch (e) {
    return missingBlob(e, task.config) ?? { ok: false, code: 'MANIFEST_INVALID', message: (e as Error).message };
  }
  const scans: Record<string, LayerScan> = {};
  for (const d of task.layers) {
    try {
      scans[d] = await scanLayer(blobs, d);
    } catch (e) {
      const missing = missingBlob(e, d);
      if (missing) return missing;
      throw e;
    }
  }
  return { ok: true, value: { config, scans } };
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

/** Counts whiteout entries (`.wh.` basenames) in a gzip-compressed or plain tar layer blob. */
export async function scanLayer(blobs: BlobBackend, digest: Digest): Promise<LayerScan> {
  const scan: LayerScan = { whiteouts: 0, examples: [], readable: true };
  let file: Readable | undefined;
  const extract = tar.extract();
  const raw = await blobs.read(digest); // absent (GC took it meanwhile): BLOB_UNKNOWN, a BLOB_UNKNOWN result
  try {
    const { head, stream } = await peek(raw, 2);
    file = stream;
    const gz = head[0] === 0x1f && head[1] === 0x8b;
    const source = gz ? file.pipe(createGunzip()) : file;
    file.on('error', (e) => extract.destroy(e));
    source.on('error', (e: Error) => extract.destroy(e));
    source.pipe(extract);
    for await (const entry of extract) {
      const base = entry.header.name.split('/').filter(Boolean).pop() ?? '';
      if (base.startsWith('.wh.')) {
        scan.whiteouts++;
        if (scan.examples.length < 5) scan.examples.push(entry.header.name);
      }
      entry.resume();
    }
  } catch {
    (file ?? raw).destroy();
    return { whiteouts: scan.whiteouts, examples: scan.examples, readable: false };
  }
  return scan;
}
