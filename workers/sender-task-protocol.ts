/**
 * The messages between the sender thread (workers/sender-task.ts) and its owner
 * (workers/sender-thread.ts): batches of attempts one way, batches of outcomes the other, and
 * SENDER_READY once the thread has loaded its code and listens.
 */
import type { AttemptOutcome } from '../engine/webhooks/deliveries.js';

/** One attempt: the request as the source built it, its deadline (ms) and its policy's text (`AllowedHosts.text`). */
export interface SendTask {
  id: number;
  url: string;
  headers: Record<string, string>;
  body: string | Uint8Array;
  timeoutMs: number;
  allowed: string;
}

/** The outcome of attempt `id`. */
export interface SendReply {
  id: number;
  outcome: AttemptOutcome;
}

/** The thread's first message: its code is loaded and it takes attempts. */
export const SENDER_READY = 'ready';
