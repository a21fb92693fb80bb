/**
 * Worker task: reads an image config and scans layer tars for whiteouts (docs/rules.md What the service does 6:
 * whiteout files are not honoured). Runs in the Piscina pool so gunzip never blocks requests.
 * Layers are streamed (gunzip → tar headers, file bodies skipped), never held in memory.
 */
import { createReadStream, promises as fsp } from 'node:fs';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import type { ConfigSummary } from '../engine/registry/image-info.js';
import type { LayerScan } from '../engine/blobs/records.js';
import type { InspectRequest, InspectResult } from '../engine/registry/registry.js';

/** Worker results never throw across threads: a clone would lose the error code. */
export type TaskResult<T> = { ok: true; value: T } | { ok: false; code: 'MANIFEST_INVALID'; message: string };

/** Largest config blob read (bytes). */
const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

export async function inspectImage(req: InspectRequest): Promise<TaskResult<InspectResult>> {
  let config: ConfigSummary;
  try {
    config = await readConfig(req.configPath);
  } catch (e) {
    return { ok: false, code: 'MANIFEST_INVALID', message: (e as Error).message };
  }
  const scans: Record<string, LayerScan> = {};
  for (const l of req.layers) scans[l.digest] = await scanLayer(l.path);
  return { ok: true, value: { config, scans } };
}

async function readConfig(path: string): Promise<ConfigSummary> {
  const { size } = await fsp.stat(path);
  if (size > MAX_CONFIG_BYTES) throw new Error(`image config is ${size} bytes; the limit is ${MAX_CONFIG_BYTES}`);
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(await fsp.readFile(path, 'utf8'));
  } catch (e) {
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

/** Counts whiteout entries (`.wh.` basenames) in a gzip-compressed or plain tar. */
export async function scanLayer(path: string): Promise<LayerScan> {
  const scan: LayerScan = { whiteouts: 0, examples: [], readable: true };
  const head = Buffer.alloc(2);
  const fh = await fsp.open(path, 'r');
  try {
    await fh.read(head, 0, 2, 0);
  } finally {
    await fh.close();
  }
  const gz = head[0] === 0x1f && head[1] === 0x8b;
  const extract = tar.extract();
  const file = createReadStream(path, { highWaterMark: 1024 * 1024 });
  const source = gz ? file.pipe(createGunzip()) : file;
  file.on('error', (e) => extract.destroy(e));
  source.on('error', (e: Error) => extract.destroy(e));
  source.pipe(extract);
  try {
    for await (const entry of extract) {
      const base = entry.header.name.split('/').filter(Boolean).pop() ?? '';
      if (base.startsWith('.wh.')) {
        scan.whiteouts++;
        if (scan.examples.length < 5) scan.examples.push(entry.header.name);
      }
      entry.resume();
    }
  } catch {
    file.destroy();
    return { whiteouts: scan.whiteouts, examples: scan.examples, readable: false };
  }
  return scan;
}
