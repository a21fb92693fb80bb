/**
 * Starts the reference registry: Debian's `docker-registry` (CNCF distribution 2.8.2) on
 * 127.0.0.1 with its own YAML config in a temp dir: filesystem storage (or, given `ReferenceS3`,
 * its S3 driver on a bucket of its own), deletes enabled, no auth, error-level logs, access log
 * off, in-memory blob descriptor cache (Debian's default).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { collectLines, exitError, freePort, type Target } from './target.js';
import { removeDir, stopChild, trackChild, trackDir } from '../cleanup.js';

/** Path of the reference binary. */
export const REFERENCE_BIN = '/usr/bin/docker-registry';

/** Whether the reference binary is installed. */
export function referenceAvailable(): boolean {
  return existsSync(REFERENCE_BIN);
}

/**
 * An S3 store for the reference's S3 driver (distribution's `storage.s3`): an endpoint of plain
 * HTTP, a bucket that exists, and keys. Path-style requests, SigV4, no encryption.
 */
export interface ReferenceS3 {
  /** `http://host:port` of the S3 API. */
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * The environment for the reference's commands (`serve`, `garbage-collect`): this process's, but
 * on S3 without AWS_CA_BUNDLE. distribution's S3 driver panics at start when it is set ("unable to
 * load custom CA bundle, HTTPClient's transport unsupported type": the driver wraps the SDK's
 * HTTP transport), and the endpoints here are plain HTTP.
 */
export function referenceEnv(onS3: boolean): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (onS3) delete env.AWS_CA_BUNDLE;
  return env;
}

function storageYaml(root: string, s3: ReferenceS3 | undefined): string {
  if (!s3) return `  filesystem:
    rootdirectory: ${root}
`;
  return `  s3:
    accesskey: ${s3.accessKeyId}
    secretkey: ${s3.secretAccessKey}
    region: ${s3.region}
    regionendpoint: ${s3.endpoint}
    bucket: ${s3.bucket}
    secure: ${s3.endpoint.startsWith('https:')}
    v4auth: true
    rootdirectory: /reference
  # Blobs are served through the registry, as Slipway serves them by default (no 307 to S3).
  redirect:
    disable: true
`;
}

function configYaml(root: string, port: number, s3: ReferenceS3 | undefined): string {
  return `version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  cache:
    blobdescriptor: inmemory
${storageYaml(root, s3)}  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:${port}
`;
}

/** A running reference: the target, plus its config file (for `docker-registry garbage-collect`). */
export interface ReferenceTarget extends Target {
  /** The YAML config the server runs with. */
  config: string;
  /** Its storage root directory (filesystem storage; unused on S3). */
  root: string;
}

/**
 * Starts docker-registry, waits until GET /v2/ answers 200, and returns the running target.
 * @param keepDir a directory to run in and keep on stop (its `data/` is the storage root, so a
 *   later start on the same directory serves the same data); default a temp dir removed on stop.
 * @param s3 store the blobs and metadata on this S3 bucket instead of the directory's `data/`.
 * @throws Error when the server exits during start or does not answer within 30 s.
 */
export async function startReference(keepDir?: string, s3?: ReferenceS3): Promise<ReferenceTarget> {
  const dir = keepDir ?? mkdtempSync(join(tmpdir(), 'reference-bench-'));
  if (!keepDir) trackDir(dir);
  const port = await freePort();
  const config = join(dir, 'config.yml');
  const root = join(dir, 'data');
  writeFileSync(config, configYaml(root, port, s3));
  let version = 'docker-registry';
  try {
    version = execFileSync(REFERENCE_BIN, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // keep the generic name
  }
  const proc = spawn(REFERENCE_BIN, ['serve', config], { env: referenceEnv(s3 !== undefined), stdio: ['ignore', 'pipe', 'pipe'] });
  trackChild(proc);
  let started = false;
  const tail = collectLines(proc, (line) => {
    // A 404 is an answer the benchmarks expect (deleted manifests), not a server error.
    if (started && line.trim() && !line.includes('http.response.status=404')) process.stderr.write(`[reference] ${line}\n`);
  });
  const registry = `http://127.0.0.1:${port}`;
  const ready = (async () => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      try {
        const r = await request(`${registry}/v2/`);
        await r.body.dump();
        if (r.statusCode === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`docker-registry did not answer GET /v2/ within 30 s:\n${tail.join('\n')}`);
  })();
  await Promise.race([ready, exitError(proc, 'docker-registry', () => tail.join('\n'))]);
  started = true;
  return {
    name: 'reference',
    registry,
    config,
    root,
    pid: proc.pid!,
    version,
    logTail: () => tail.slice(),
    stop: async () => {
      await stopChild(proc);
      if (!keepDir) removeDir(dir);
    },
  };
}
