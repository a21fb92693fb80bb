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
import type { InspectTask, TaskResult } from './inspect-image.js';
import type { BlobBackendSpec } from '../engine/blobs/backend-spec.js';

export interface PoolOptions {
  /** Upper bound of worker threads (default: 2, the machine's cores). */
  maxThreads?: number;
  /** ms a thread may idle before it exits (default 30 s). */
  idleTimeoutMs?: number;
}

export class WorkerPool {
  readonly #pool: Piscina;

  constructor(opts: PoolOptions = {}) {
    this.#pool = new Piscina({
      filename: new URL('./tasks.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: opts.maxThreads ?? 2,
      idleTimeout: opts.idleTimeoutMs ?? 30_000,
    });
  }

  /**
   * Reads the config and scans the named layers, stored in the backend `blobs` describes.
   * @throws MANIFEST_INVALID when the config is unreadable or not JSON; BLOB_UNKNOWN when a blob
   *   is not stored; BLOB_STORE_UNAVAILABLE when the store cannot be read; Error when `blobs` is
   *   undefined (a backend built on a client instance cannot be opened by another thread).
   */
  async inspectImage(blobs: BlobBackendSpec | undefined, req: InspectRequest): Promise<InspectResult> {
    if (!blobs) throw new Error('image inspection needs a blob backend a worker thread can open (no description)');
    const task: InspectTask = { ...req, blobs };
    const r = (await this.#run(task, 'inspectImage')) as TaskResult<InspectResult>;
    if (!r.ok) {
      if (r.code === 'BLOB_UNKNOWN') throw fail(r.code, r.message, { digest: r.digest });
      if (r.code === 'BLOB_STORE_UNAVAILABLE') throw fail(r.code, r.message, { retryAfter: r.retryAfter });
      throw fail(r.code, r.message);
    }
    return r.value;
  }

  /** sha256 digest and size (bytes) of a file. */
  async hashFile(path: string): Promise<{ digest: Digest; size: number }> {
    return (await this.#run(path, 'hashFile')) as { digest: Digest; size: number };
  }

  /** Tasks waiting for a thread. */
  get queueSize(): number {
    return this.#pool.queueSize;
  }

  /** Called after every task with its name and duration in seconds (queue wait included); metrics. */
  onTask: ((name: string, seconds: number) => void) | undefined;

  async #run(arg: unknown, name: string): Promise<unknown> {
    const started = performance.now();
    try {
      return await this.#pool.run(arg, { name });
    } finally {
      this.onTask?.(name, (performance.now() - started) / 1000);
    }
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
