/**
 * The sender thread's task (workers/sender-thread.ts): one delivery attempt's HTTP exchange, made
 * by engine/webhooks/sender.ts `send` with this thread's keep-alive connections. The destination
 * policy crosses the thread boundary as its text and is parsed here once per distinct text.
 */
import { send } from '../engine/webhooks/sender.js';
import { parseAllowedHosts, type AllowedHosts } from '../engine/webhooks/destination.js';
import type { AttemptOutcome } from '../engine/webhooks/deliveries.js';
import type { OutboundRequest } from '../engine/webhooks/sources.js';

/** One attempt: the request as the source built it, its deadline (ms) and its policy's text (`AllowedHosts.text`). */
export interface SendTask {
  url: string;
  headers: Record<string, string>;
  body: string | Uint8Array;
  timeoutMs: number;
  allowed: string;
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

/** Makes the attempt; resolves with its outcome within `task.timeoutMs` (never rejects). */
export default function sendAttempt(task: SendTask): Promise<AttemptOutcome> {
  const req: OutboundRequest = { url: task.url, headers: task.headers, body: task.body };
  return send(req, task.timeoutMs, policyOf(task.allowed));
}
