/**
 * The webhook bench's receiver as a process of its own (bench/webhooks/remote-receiver.ts forks
 * it): a real node:http receiver (test/helpers/webhook-receiver.ts) on loopback, answering 200.
 * A receiver lives outside the client that makes the releases, as a user's deployer does: in the
 * client's process, each delivery it parsed ran on the event loop that timed the next release.
 *
 * IPC, parent → child: `{ since: n }`; child → parent: `{ url }` once listening, then for each
 * `since` `{ received: Received[] }` (the requests from index n on, in arrival order).
 */
import { startReceiver } from '../../test/helpers/webhook-receiver.js';

const receiver = await startReceiver();
process.on('message', (m: { since?: number; close?: true }) => {
  if (m.close) {
    void receiver.close().then(() => process.exit(0));
    return;
  }
  process.send!({ received: receiver.received.slice(m.since ?? 0) });
});
process.on('disconnect', () => void receiver.close().then(() => process.exit(0)));
process.send!({ url: receiver.url });
