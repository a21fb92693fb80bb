/**
 * The sender thread (workers/sender-thread.ts): each message is a batch of delivery attempts, each
 * an HTTP exchange made by engine/webhooks/sender.ts `send` with this thread's keep-alive
 * connections; outcomes go back batched the same way. The destination policy crosses the thread boundary as its text
 * and is parsed here once per distinct text.
 */
import { parentPort } from 'node:worker_threads';
import { send } from '../engine/webhooks/sender.js';
import { parseAllowedHosts, type AllowedHosts } from '../engine/webhooks/destination.js';
import type { AttemptOutcome } from '../engine/webhooks/deliveries.js';
import { SENDER_READY, type SendReply, type SendTask } from './sender-task-protocol.js';

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

/** Outcomes to post back at the end of this turn of the event loop (one message for all). */
const replies: SendReply[] = [];

function reply(r: SendReply): void {
  replies.push(r);
  if (replies.length === 1) setImmediate(() => parentPort!.postMessage(replies.splice(0)));
}

parentPort?.on('message', (tasks: SendTask[]) => {
  for (const task of tasks) {
    void send({ url: task.url, headers: task.headers, body: task.body }, task.timeoutMs, policyOf(task.allowed))
      .catch((e: unknown): AttemptOutcome => ({ ok: false, code: null, cause: 'error', detail: e instanceof Error ? e.message.slice(0, 200) : 'request failed' }))
      .then((outcome) => reply({ id: task.id, outcome }));
  }
});
parentPort?.postMessage(SENDER_READY);
