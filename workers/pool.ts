/**
 * Typed facade over the Piscina pool: one method per task. Paths, not bytes, cross the thread
 * boundary. Threads start on demand and exit when idle, so a server that is only receiving
 * uploads keeps no worker memory resident.
 */
import { Piscina } from 'piscina';
import { fail } from '../engine/errors.js';
import type { Digest } from '../engine/digest.js';
import type { InspectRequest, InspectResult } from '../engine/registry/registry.js';
import type { TaskResult } from './inspect-image.js';

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
   * Reads the config and scans the named layers.
   * @throws MANIFEST_INVALID when the config is unreadable or not JSON.
   */
  async inspectImage(req: InspectRequest): Promise<InspectResult> {
    const r = (await this.#run(req, 'inspectImage')) as TaskResult<InspectResult>;
    if (!r.ok) throw fail(r.code, r.message);
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
