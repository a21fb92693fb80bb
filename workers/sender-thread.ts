/**
 * Delivery attempts' HTTP exchanges on a thread of their own (docs/webhooks.md "Engine"). An
 * attempt's exchange (connecting, writing the request, parsing the answer) cost about as much
 * event-loop time as the release that made its event; on the event loop, every delivery thus
 * delayed the requests running beside it. On this thread, the event loop keeps the worker's
 * passes (a transaction each) and building each request (reading the webhook, rendering and
 * signing the payload); the thread makes the exchange with engine/webhooks/sender.ts `send`, the
 * same checks (URL, addresses after DNS, one deadline) and its own keep-alive connections.
 *
 * One node:worker_threads Worker, all attempts in flight at once on it (they mostly wait for the
 * network), started on the first attempt and ended after `idleTimeoutMs` without one, so a node
 * without webhooks never starts it. A plain Worker and one message each way: Piscina's task
 * dispatch cost ~3× the main-thread CPU of a postMessage per attempt here. If the thread dies,
 * its attempts in flight are recorded as `error` and the next attempt starts a new one.
 */
import { Worker } from 'node:worker_threads';
import type { Sender } from '../engine/webhooks/sender.js';
import type { AttemptOutcome } from '../engine/webhooks/deliveries.js';
import type { SendReply, SendTask } from './sender-task.js';
import { SENDER_THREAD_RESOURCE_LIMITS } from '../server/runtime-flags.js';

/**
 * Time past an attempt's deadline (ms) after which the caller stops waiting for the thread: the
 * exchange's own timer ends it first unless the thread is stuck. The attempt is then recorded as
 * `timeout`.
 */
export const SENDER_GRACE_MS = 2_000;

/** Settings of the sender thread. */
export interface SenderThreadOptions {
  /** ms the thread may idle (no attempt in flight) before it ends (default 30 s). */
  idleTimeoutMs?: number;
}

export class SenderThread {
  readonly #idleTimeoutMs: number;
  #worker: Worker | null = null;
  #nextId = 1;
  readonly #waiting = new Map<number, (o: AttemptOutcome) => void>();
  #idle: NodeJS.Timeout | undefined;
  #closed = false;
  /** The thread has started (its 'online' event). */
  #online = false;
  /** Deadlines to start once the thread is online. */
  #arming: Array<() => void> = [];

  constructor(opts: SenderThreadOptions = {}) {
    this.#idleTimeoutMs = opts.idleTimeoutMs ?? 30_000;
  }

  /** A Sender (engine/webhooks/sender.ts) that makes the exchange on the thread; never rejects. */
  readonly send: Sender = (req, timeoutMs, allowed) => {
    if (this.#closed) return Promise.resolve({ ok: false, code: null, cause: 'error', detail: 'the node is stopping' });
    const id = this.#nextId++;
    const worker = this.#start();
    clearTimeout(this.#idle);
    return new Promise<AttemptOutcome>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      // Counted from when the thread runs (its start-up can take a while on a busy machine), and
      // checked once more after the event loop has read the replies waiting: after a long pause,
      // expired timers run before the messages that arrived meanwhile.
      const arm = () => {
        timer = setTimeout(() => setImmediate(() => this.#settle(id, { ok: false, code: null, cause: 'timeout', detail: `no outcome from the sender thread within ${timeoutMs + SENDER_GRACE_MS} ms` })), timeoutMs + SENDER_GRACE_MS);
      };
      if (this.#online) arm();
      else this.#arming.push(arm);
      this.#waiting.set(id, (o) => {
        clearTimeout(timer);
        resolve(o);
      });
      const task: SendTask = { id, url: req.url, headers: req.headers, body: req.body, timeoutMs, allowed: allowed.text };
      worker.postMessage(task);
    });
  };

  #settle(id: number, outcome: AttemptOutcome): void {
    const done = this.#waiting.get(id);
    if (!done) return;
    this.#waiting.delete(id);
    done(outcome);
    if (this.#waiting.size === 0 && this.#worker) {
      const worker = this.#worker;
      this.#idle = setTimeout(() => {
        if (this.#worker === worker && this.#waiting.size === 0) {
          this.#worker = null;
          this.#online = false;
          void worker.terminate();
        }
      }, this.#idleTimeoutMs);
      this.#idle.unref();
    }
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL('./sender-task.js', import.meta.url), { resourceLimits: SENDER_THREAD_RESOURCE_LIMITS });
    worker.unref();
    worker.on('message', (r: SendReply) => this.#settle(r.id, r.outcome));
    worker.on('online', () => {
      if (this.#worker !== worker) return;
      this.#online = true;
      for (const arm of this.#arming.splice(0)) arm();
    });
    const lost = (e?: unknown) => {
      if (this.#worker !== worker) return;
      this.#worker = null;
      this.#online = false;
      this.#arming = [];
      const detail = `sender thread ended${e instanceof Error ? `: ${e.message.slice(0, 160)}` : ''}`;
      for (const id of [...this.#waiting.keys()]) this.#settle(id, { ok: false, code: null, cause: 'error', detail });
    };
    worker.on('error', lost);
    worker.on('exit', () => lost());
    this.#worker = worker;
    return worker;
  }

  /** Ends the thread; attempts still on it are recorded as `error`. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idle);
    const worker = this.#worker;
    if (!worker) return;
    const stopped = worker.terminate();
    this.#worker = null;
    this.#online = false;
    this.#arming = [];
    for (const id of [...this.#waiting.keys()]) this.#settle(id, { ok: false, code: null, cause: 'error', detail: 'the node is stopping' });
    await stopped;
  }
}
