/**
 * Delivery attempts' HTTP exchanges on a thread of their own (docs/webhooks.md "Engine"). An
 * attempt's exchange (connecting, writing the request, parsing the answer) cost about as much
 * event-loop time as the release that made its event; on the event loop, every delivery thus
 * delayed the requests running beside it. On this thread, the event loop keeps the worker's
 * passes (a transaction each) and building each request (reading the webhook, rendering and
 * signing the payload); the thread makes the exchange with engine/webhooks/sender.ts `send`, the
 * same checks (URL, addresses after DNS, one deadline) and its own keep-alive connections.
 *
 * One thread (Piscina, up to `concurrency` attempts at once on it: the exchanges mostly wait
 * for the network), started on the first attempt and ended after `idleTimeoutMs` without one, so
 * a node without webhooks never starts it.
 */
import { Piscina } from 'piscina';
import type { Sender } from '../engine/webhooks/sender.js';
import type { AttemptOutcome } from '../engine/webhooks/deliveries.js';
import type { SendTask } from './sender-task.js';
import { SENDER_THREAD_RESOURCE_LIMITS } from '../server/runtime-flags.js';

/**
 * Time past an attempt's deadline (ms) after which the caller stops waiting for the thread: the
 * exchange's own timer ends it first unless the thread is stuck. The attempt is then recorded as
 * `timeout`. (No AbortSignal is given to Piscina: it runs an abortable task alone on its thread,
 * which would make the attempts wait for one another.)
 */
export const SENDER_GRACE_MS = 2_000;

/** Settings of the sender thread. */
export interface SenderThreadOptions {
  /** Attempts in flight on the thread at once (default 64: above the worker's 32 in flight). */
  concurrency?: number;
  /** ms the thread may idle before it ends (default 30 s). */
  idleTimeoutMs?: number;
}

export class SenderThread {
  readonly #pool: Piscina;

  constructor(opts: SenderThreadOptions = {}) {
    this.#pool = new Piscina({
      filename: new URL('./sender-task.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: 1,
      concurrentTasksPerWorker: opts.concurrency ?? 64,
      idleTimeout: opts.idleTimeoutMs ?? 30_000,
      resourceLimits: SENDER_THREAD_RESOURCE_LIMITS,
    });
  }

  /** A Sender (engine/webhooks/sender.ts) that makes the exchange on the thread; never rejects. */
  readonly send: Sender = async (req, timeoutMs, allowed) => {
    const task: SendTask = { url: req.url, headers: req.headers, body: req.body, timeoutMs, allowed: allowed.text };
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<AttemptOutcome>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, code: null, cause: 'timeout', detail: `no outcome from the sender thread within ${timeoutMs + SENDER_GRACE_MS} ms` }), timeoutMs + SENDER_GRACE_MS);
    });
    const outcome = (this.#pool.run(task) as Promise<AttemptOutcome>).catch((e: unknown): AttemptOutcome =>
      ({ ok: false, code: null, cause: 'error', detail: `sender thread: ${(e instanceof Error ? e.message : String(e)).slice(0, 160)}` }));
    try {
      return await Promise.race([outcome, late]);
    } finally {
      clearTimeout(timer);
    }
  };

  /** Ends the thread; attempts still on it are recorded as `error` by their callers. */
  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
