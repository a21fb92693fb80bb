/**
 * Starts the reference registry: Debian's `docker-registry` (CNCF distribution 2.8.2) on
 * 127.0.0.1 with its own YAML config in a temp dir: filesystem storage, deletes enabled, no
 * auth, error-level logs, access log off, in-memory blob descriptor cache (Debian's default).
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

function configYaml(root: string, port: number): string {
  return `version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  cache:
    blobdescriptor: inmemory
  filesystem:
    rootdirectory: ${root}
  delete:
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
  /** Its storage root directory. */
  root: string;
}

/**
 * Starts docker-registry, waits until GET /v2/ answers 200, and returns the running target.
 * @param keepDir a directory to run in and keep on stop (its `data/` is the storage root, so a
 *   later start on the same directory serves the same data); default a temp dir removed on stop.
 * @throws Error when the server exits during start or does not answer within 30 s.
 */
export async function startReference(keepDir?: string): Promise<ReferenceTarget> {
  const dir = keepDir ?? mkdtempSync(join(tmpdir(), 'reference-bench-'));
  if (!keepDir) trackDir(dir);
  const port = await freePort();
  const config = join(dir, 'config.yml');
  const root = join(dir, 'data');
  writeFileSync(config, configYaml(root, port));
  let version = 'docker-registry';
  try {
    version = execFileSync(REFERENCE_BIN, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // keep the generic name
  }
  const proc = spawn(REFERENCE_BIN, ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] });
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
