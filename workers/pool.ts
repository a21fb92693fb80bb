/**
 * Typed facade over the Piscina pool: one method per task. Digests and a backend's description
 * (engine/blobs/backend-spec.ts), not bytes, cross the thread boundary; the threads read blobs
 * through their own instance of the backend. Threads start on demand and exit when idle, so a server that is only receiving
 * uploads keeps no worker memory resident.
 */
import { Piscina } from 'piscina';
import { fail } from '../engine/errors.js';
import type { Digest } from '../engine/digest.js';
import type { InspectRequest, InspectResult } from '../engine/registry/registry.js';
import type { ConfigSummary } from '../engine/registry/image-info.js';
import type { LayerScan } from '../engine/blobs/records.js';
import { DEFAULT_INSPECT_LIMITS, limitReason, type InspectLimits } from '../engine/registry/inspect-limits.js';
import type { ConfigTask, LayerTask, TaskResult } from './inspect-image.js';
import type { BlobBackendSpec } from '../engine/blobs/backend-spec.js';
import { FairQueue } from './fair-queue.js';
import { WORKER_RESOURCE_LIMITS } from '../server/runtime-flags.js';

export interface PoolOptions {
  /** Threads for image inspection (default: 2, the machine's cores). One more thread serves the readiness probe's `hashFile`. */
  maxThreads?: number;
  /** ms a thread may idle before it exits (default 30 s). */
  idleTimeoutMs?: number;
  /** Limits of one layer's scan (default DEFAULT_INSPECT_LIMITS). */
  limits?: InspectLimits;
  /** Inspection threads one account may use at once (default: all but one, at least 1). */
  accountShare?: number;
}

/**
 * Seconds past a layer's time limit after which the pool gives up on the thread scanning it
 * (Piscina aborts the task, ending the thread): the scan's own timer normally stops it first.
 */
export const SCAN_GRACE_SECONDS = 5;

export class WorkerPool {
  readonly #pool: Piscina;
  readonly #fair: FairQueue;
  readonly limits: InspectLimits;

  constructor(opts: PoolOptions = {}) {
    const threads = opts.maxThreads ?? 2;
    this.limits = opts.limits ?? DEFAULT_INSPECT_LIMITS;
    this.#fair = new FairQueue(threads, Math.min(threads, opts.accountShare ?? Math.max(1, threads - 1)));
    this.#pool = new Piscina({
      filename: new URL('./tasks.js', import.meta.url).href,
      minThreads: 0,
      // The fair queue never runs more than `threads` inspection tasks: the extra thread keeps
      // the readiness probe from waiting behind a long layer scan.
      maxThreads: threads + 1,
      idleTimeout: opts.idleTimeoutMs ?? 30_000,
      resourceLimits: WORKER_RESOURCE_LIMITS,
    });
  }

  /** Inspection threads one account may use at once. */
  get accountShare(): number {
    return this.#fair.share;
  }

  /**
   * Reads the config and scans the named layers, stored in the backend `blobs` describes: one
   * task for the config, then one per layer, each queued under `req.account` in the fair queue
   * (workers/fair-queue.ts). A layer whose scan hits a limit comes back with `unscanned`.
   * @throws MANIFEST_INVALID when the config is unreadable or not JSON; BLOB_UNKNOWN with
   *   `{ digest }` when a blob is not stored; BLOB_STORE_UNAVAILABLE when the store cannot be
   *   read; Error when `blobs` is undefined (a backend built on
   *   a client instance cannot be opened by another thread).
   */
  async inspectImage(blobs: BlobBackendSpec | undefined, req: InspectRequest): Promise<InspectResult> {
    if (!blobs) throw new Error('image inspection needs a blob backend a worker thread can open (no description)');
    const started = performance.now();
    const tenant = req.account ?? '';
    try {
      const configTask: ConfigTask = { blobs, config: req.config };
      const config = unwrap(await this.#fair.run(tenant, () => this.#pool.run(configTask, { name: 'readImageConfig' }) as Promise<TaskResult<ConfigSummary>>));
      const scanned = await Promise.all(req.layers.map((digest) => this.#fair.run(tenant, () => this.#scan({ blobs, digest, limits: this.limits }))));
      return { config, scans: Object.fromEntries(req.layers.map((d, i) => [d, scanned[i]!])) };
    } finally {
      this.onTask?.('inspectImage', (performance.now() - started) / 1000);
    }
  }

  /** One layer's scan, given up (as a scan stopped at the time limit) when the thread overruns the limit by SCAN_GRACE_SECONDS. */
  async #scan(task: LayerTask): Promise<LayerScan> {
    const signal = AbortSignal.timeout((task.limits.maxSeconds + SCAN_GRACE_SECONDS) * 1000);
    try {
      return unwrap(await (this.#pool.run(task, { name: 'scanLayer', signal }) as Promise<TaskResult<LayerScan>>));
    } catch (e) {
      if (!signal.aborted) throw e;
      return { whiteouts: 0, examples: [], readable: true, unscanned: limitReason('time', task.limits) };
    }
  }

  /** sha256 digest and size (bytes) of a file. */
  async hashFile(path: string): Promise<{ digest: Digest; size: number }> {
    return (await this.#run(path, 'hashFile')) as { digest: Digest; size: number };
  }

  /** Tasks waiting for a thread: in the fair queue and in Piscina's. */
  get queueSize(): number {
    return this.#fair.waiting + this.#pool.queueSize;
  }

  /** Called after every image inspection and `hashFile` task with its name and duration in seconds (queue wait included); metrics. */
  onTask: ((name: string, seconds: number) => void) | undefined;

  async #run(arg: unknown, name: string): Promise<unknown> {
    const started = performance.now();
    try {
      return await this.#pool.run(arg, { name });
    } finally {
      this.onTask?.(name, (performance.now() - started) / 1000);
    }
  }

  /** Closes the pool; tasks still running are ended. */
  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}

/** The value of a worker result, or its error as a SlipwayError (BLOB_UNKNOWN carries `{ digest }`). */
function unwrap<T>(r: TaskResult<T>): T {
  if (r.ok) return r.value;
  if (r.code === 'BLOB_UNKNOWN') throw fail(r.code, r.message, { digest: r.digest });
  if (r.code === 'BLOB_STORE_UNAVAILABLE') throw fail(r.code, r.message, { retryAfter: r.retryAfter });
  throw fail(r.code, r.message);
}
