/**
 * The parent's side of the webhook bench's receiver process (receiver-process.ts): its `url`,
 * and `received`, the requests it got, brought up to date by `refresh()` (one IPC round trip).
 * The bench refreshes only while it waits for deliveries, never while it times releases, so the
 * receiver's work (HTTP parsing, JSON) never runs on the event loop that times a release.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Received } from '../../test/helpers/webhook-receiver.js';

/** A receiver in a process of its own. */
export class RemoteReceiver {
  /** Requests received up to the last `refresh()`, in arrival order (`at`: Date.now() there). */
  readonly received: Received[] = [];
  #waiting: ((r: Received[]) => void) | undefined;

  private constructor(readonly url: string, readonly child: ChildProcess) {
    child.on('message', (m: { received?: Received[] }) => {
      if (m.received) this.#waiting?.(m.received);
    });
  }

  /**
   * Forks the receiver and waits until it listens.
   * @throws Error when the process ends before it listens
   */
  static async start(): Promise<RemoteReceiver> {
    const child = fork(new URL('./receiver-process.js', import.meta.url), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const url = await new Promise<string>((resolve, reject) => {
      child.once('message', (m: { url?: string }) => (m.url ? resolve(m.url) : reject(new Error('receiver: unexpected first message'))));
      child.once('exit', (code) => reject(new Error(`receiver process ended (${code}) before it listened`)));
    });
    return new RemoteReceiver(url, child);
  }

  /** Appends the requests received since the last refresh. @throws Error when the process is gone or ends before it answers */
  async refresh(): Promise<void> {
    if (!this.child.connected) throw new Error('receiver process is gone');
    let onExit = (): void => {};
    const got = await new Promise<Received[]>((resolve, reject) => {
      onExit = () => reject(new Error('receiver process ended before it answered'));
      this.child.once('exit', onExit);
      this.#waiting = resolve;
      this.child.send({ since: this.received.length });
    }).finally(() => {
      this.child.off('exit', onExit);
      this.#waiting = undefined;
    });
    this.received.push(...got);
  }

  /** Stops the receiver process. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || !this.child.connected) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.send({ close: true });
    await exited;
  }
}
