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
 * without webhooks never starts it. A plain Worker, and one message each way per turn of either
 * event loop, carrying every attempt (or outcome) of that turn: a message per attempt cost ~150
 * µs of the event loop's CPU in a profile of the bench, Piscina's task dispatch ~3× that. If the thread dies,
 * its attempts in flight are recorded as `error` and the next attempt starts a new one.
 */
import { Worker } from 'node:worker_threads';
import type { Sender } from '../engine/webhooks/sender.js';
import type { AttemptOutcome } from '../engine/webhooks/deliveries.js';
import { SENDER_READY, type SendReply, type SendTask } from './sender-task-protocol.js';
import { SENDER_THREAD_RESOURCE_LIMITS } from '../server/runtime-flags.js';

/**
 * Time past an attempt's deadline (ms) after which the caller stops waiting for the thread: the
 * exchange's own timer ends it first unless the thread is stuck. The attempt is then recorded as
 * `timeout`.
 */
export const SENDER_GRACE_MS = 2_000;

/** Longest wait for a new thread to load its code (ms); past it the thread is ended and its attempts are recorded as `error`. */
export const SENDER_START_MS = 30_000;

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
  /** The thread has loaded its code and listens (its SENDER_READY message). */
  #online = false;
  /** Deadlines to start once the thread is online. */
  #arming: Array<() => void> = [];
  /** Attempts to post to the thread at the end of this turn of the event loop. */
  readonly #queue: SendTask[] = [];

  constructor(opts: SenderThreadOptions = {}) {
    this.#idleTimeoutMs = opts.idleTimeoutMs ?? 30_000;
  }

  /** A Sender (engine/webhooks/sender.ts) that makes the exchange on the thread; never rejects. */
  readonly send: Sender = (req, timeoutMs, allowed) => {
    if (this.#closed) return Promise.resolve({ ok: false, code: null, cause: 'error', detail: 'the node is stopping' });
    const id = this.#nextId++;
    this.#start();
    clearTimeout(this.#idle);
    return new Promise<AttemptOutcome>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      // Counted from when the thread listens (its start-up took seconds on a busy machine), and
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
      this.#queue.push({ id, url: req.url, headers: req.headers, body: req.body, timeoutMs, allowed: allowed.text });
      if (this.#queue.length === 1) setImmediate(() => this.#flush());
    });
  };

  /** Posts the attempts queued in this turn of the event loop as one message. */
  #flush(): void {
    const batch = this.#queue.splice(0);
    if (batch.length > 0) this.#worker?.postMessage(batch);
  }

  #settle(id: number, outcome: AttemptOutcome): void {
    const done = this.#waiting.get(id);
    if (!done) return;
    this.#waiting.delete(id);
    done(outcome);
    if (this.#waiting.size === 0 && this.#worker) {
      const worker = this.#worker;
      this.#idle = setTimeout(() => {
        if (this.#worker === worker && this.#waiting.size === 0) {
          this.#detach(null);
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
    worker.on('message', (m: SendReply[] | typeof SENDER_READY) => {
      if (m !== SENDER_READY) {
        for (const r of m) this.#settle(r.id, r.outcome);
      } else if (this.#worker === worker) {
        clearTimeout(starting);
        this.#online = true;
        for (const arm of this.#arming.splice(0)) arm();
      }
    });
    const lost = (e?: unknown) => {
      clearTimeout(starting);
      if (this.#worker !== worker) return;
      this.#detach(`sender thread ended${e instanceof Error ? `: ${e.message.slice(0, 160)}` : ''}`);
    };
    const starting = setTimeout(() => {
      lost(new Error(`it did not start within ${SENDER_START_MS} ms`));
      void worker.terminate();
    }, SENDER_START_MS);
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
    this.#detach('the node is stopping');
    await stopped;
  }

  /**
   * Forgets the current thread: attempts queued for it are never posted, and every attempt
   * waiting is recorded as `error` with `detail` (none wait when the thread ends idle: null).
   */
  #detach(detail: string | null): void {
    this.#worker = null;
    this.#online = false;
    this.#arming = [];
    this.#queue.length = 0;
    if (detail === null) return;
    for (const id of [...this.#waiting.keys()]) this.#settle(id, { ok: false, code: null, cause: 'error', detail });
  }
}
