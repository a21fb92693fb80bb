/**
 * The sender thread (workers/sender-thread.ts): each message is one delivery attempt's HTTP
 * exchange, made by engine/webhooks/sender.ts `send` with this thread's keep-alive connections;
 * the reply carries its outcome. The destination policy crosses the thread boundary as its text
 * and is parsed here once per distinct text.
 */
import { parentPort } from 'node:worker_threads';
import { send } from '../engine/webhooks/sender.js';
import { parseAllowedHosts, type AllowedHosts } from '../engine/webhooks/destination.js';
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

/**
 * Policies parsed so far, by text: the operator's allowance and one per configured notification
 * endpoint, so a handful. Kept (their keep-alive agents are keyed by the parsed object); past
 * MAX_POLICIES the map starts again, which only costs new connections.
 */
const policies = new Map<string, AllowedHosts>();
const MAX_POLICIES = 256;

function policyOf(text: string): AllowedHosts {
  let p = policies.get(text);
  if (!p) {
    if (policies.size >= MAX_POLICIES) policies.clear();
    p = parseAllowedHosts(text);
    policies.set(text, p);
  }
  return p;
}

parentPort?.on('message', (task: SendTask) => {
  void send({ url: task.url, headers: task.headers, body: task.body }, task.timeoutMs, policyOf(task.allowed))
    .catch((e: unknown): AttemptOutcome => ({ ok: false, code: null, cause: 'error', detail: e instanceof Error ? e.message.slice(0, 200) : 'request failed' }))
    .then((outcome) => parentPort!.postMessage({ id: task.id, outcome } satisfies SendReply));
});
