/**
 * Readiness checks for the admin listener's `/readyz` (Kubernetes probe conventions: 200 when
 * the process should receive traffic, 503 with the reasons otherwise). Each check is bounded by
 * `CHECK_TIMEOUT_MS` so a wedged thread answers "not ready" instead of hanging the probe.
 */
import { promises as fsp } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Store } from '../../engine/store.js';
import type { HashFactory } from '../../engine/blobs/running-hash.js';
import type { Digest } from '../../engine/digest.js';
import { schemaVersion } from '../../engine/migrations.js';
import { StoreUnavailableError } from '../../engine/storage/metadata.js';
import type { RequestTracker } from './drain.js';
import { dataDisk } from '../../engine/storage/disk-deadline.js';

const CHECK_TIMEOUT_MS = 5_000;

/** What the readiness checks look at. */
export interface ReadinessTargets {
  store: Store;
  dataDir: string;
  /** Free bytes below which the server reports not ready. */
  minFreeBytes: number;
  hashFile(path: string): Promise<{ digest: Digest; size: number }>;
  newHash: HashFactory;
  tracker: RequestTracker;
  /** Check of a remote blob store (S3: the bucket answers); absent for the filesystem. */
  blobStore?: () => Promise<void>;
}

/** Result of one probe: `ready` plus each failed check's reason by name. */
export interface Readiness {
  ready: boolean;
  checks: Record<string, 'ok' | string>;
}

function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS); })])
    .finally(() => clearTimeout(timer));
}

async function check(name: string, out: Record<string, string>, fn: () => Promise<void>): Promise<void> {
  try {
    await within(fn(), name);
    out[name] = 'ok';
  } catch (e) {
    // A store that cannot be reached: the driver's reason (readiness is the operator's view).
    out[name] = e instanceof StoreUnavailableError ? e.reason : e instanceof Error ? e.message : String(e);
  }
}

/** Runs every check. Never throws. */
export async function probeReadiness(t: ReadinessTargets): Promise<Readiness> {
  const checks: Record<string, string> = {};
  if (t.tracker.draining) checks.draining = 'the server is draining (shutdown signal received)';
  const probe = join(t.dataDir, 'blobs', `.ready-${randomBytes(6).toString('hex')}`);
  const content = randomBytes(64);
  await Promise.all([
    check('store', checks, async () => {
      if ((await schemaVersion(t.store.metadata)) === undefined) throw new Error('the store has no schema record');
    }),
    check('disk', checks, async () => {
      // A disk that hangs: said from memory, without adding I/O to what waits on it.
      const stuck = dataDisk.stuck();
      if (stuck) throw new Error(`the data disk is not answering: ${stuck.what} has waited ${(stuck.ms / 1000).toFixed(1)} s (SLIPWAY_DISK_TIMEOUT ${dataDisk.timeoutMs / 1000} s)`);
      const s = await dataDisk.run('a statfs of the data directory', fsp.statfs(t.dataDir));
      const free = s.bavail * s.bsize;
      if (free < t.minFreeBytes) throw new Error(`${free} bytes free in the data directory, below the ${t.minFreeBytes}-byte threshold`);
    }),
    check('blobStorage', checks, async () => {
      if (dataDisk.stuck()) throw new Error('not probed: the data disk is not answering (checks.disk)');
      await dataDisk.run('a mkdir of the blob directory', fsp.mkdir(join(t.dataDir, 'blobs'), { recursive: true }));
      await dataDisk.run('a write of the readiness probe file', fsp.writeFile(probe, content));
      try {
        await check('workerPool', checks, async () => {
          const r = await t.hashFile(probe);
          if (r.digest !== 'sha256:' + createHash('sha256').update(content).digest('hex')) throw new Error('the worker pool hashed a probe file wrongly');
        });
      } finally {
        await dataDisk.run('a removal of the readiness probe file', fsp.rm(probe, { force: true }));
      }
    }),
    ...(t.blobStore ? [check('blobStore', checks, t.blobStore)] : []),
    check('hashThread', checks, async () => {
      const h = t.newHash();
      const bytes = Buffer.from(new SharedArrayBuffer(content.length));
      content.copy(bytes);
      await new Promise<void>((resolve) => h.update(bytes, resolve));
      const hex = await h.digest();
      if (hex !== createHash('sha256').update(content).digest('hex')) throw new Error('the hash thread did not answer (lost) or hashed wrongly');
    }),
  ]);
  return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
}
