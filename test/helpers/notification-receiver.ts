/**
 * A registry-notification endpoint for tests: a node:http server on loopback that reads each
 * POST as distribution's consumers read it (the body is an envelope `{"events": [...]}` sent as
 * `application/vnd.docker.distribution.events.v1+json`; each event is checked for the fields
 * distribution's `notifications.Event` always carries) and keeps what it received. It answers
 * 200, or what `respondWith` says; `down()` closes the port (connections refused) and `up()`
 * listens on the same port again.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DistributionEvent } from '../../engine/notifications/envelope.js';

/** One notification request as received. */
export interface ReceivedEnvelope {
  headers: IncomingHttpHeaders;
  events: DistributionEvent[];
  /** Problems with the request as a distribution consumer sees them (empty when well formed). */
  problems: string[];
}

const MEDIA_TYPE = 'application/vnd.docker.distribution.events.v1+json';

/** The problems a distribution consumer would have with one event. */
function eventProblems(e: Record<string, unknown>): string[] {
  const p: string[] = [];
  const str = (v: unknown) => typeof v === 'string' && v !== '';
  if (!str(e.id)) p.push('event without id');
  if (!str(e.timestamp) || Number.isNaN(Date.parse(e.timestamp as string))) p.push('timestamp is not RFC 3339');
  if (!['push', 'pull', 'delete', 'mount'].includes(e.action as string)) p.push(`unknown action ${String(e.action)}`);
  const target = e.target as Record<string, unknown> | undefined;
  if (!target || !str(target.repository)) p.push('target without repository');
  const request = e.request as Record<string, unknown> | undefined;
  if (!request || typeof request.id !== 'string' || typeof request.method !== 'string' || typeof request.useragent !== 'string') p.push('request without id, method or useragent');
  if (typeof e.actor !== 'object' || typeof e.source !== 'object') p.push('actor or source missing');
  return p;
}

export class NotificationReceiver {
  readonly received: ReceivedEnvelope[] = [];
  /** Status answered to the next requests (default 200). */
  status = 200;
  #server: Server;
  port = 0;

  private constructor() {
    this.#server = this.#create();
  }

  #create(): Server {
    return createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const problems: string[] = [];
        if (req.method !== 'POST') problems.push(`method ${req.method}`);
        if (req.headers['content-type'] !== MEDIA_TYPE) problems.push(`content-type ${req.headers['content-type']}`);
        let events: DistributionEvent[] = [];
        try {
          const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { events?: unknown };
          if (!Array.isArray(envelope.events)) problems.push('no events array');
          else events = envelope.events as DistributionEvent[];
        } catch {
          problems.push('body is not JSON');
        }
        for (const e of events) problems.push(...eventProblems(e as unknown as Record<string, unknown>));
        if (this.status < 300) this.received.push({ headers: req.headers, events, problems });
        res.writeHead(this.status).end();
      });
    });
  }

  /** Starts a receiver on 127.0.0.1 (any free port). */
  static async start(): Promise<NotificationReceiver> {
    const r = new NotificationReceiver();
    await r.up();
    return r;
  }

  /** The endpoint URL. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/events`;
  }

  /** Every event received (in arrival order). */
  events(): DistributionEvent[] {
    return this.received.flatMap((r) => r.events);
  }

  /** Listens (again, on the same port once one was bound). */
  async up(): Promise<void> {
    if (this.#server.listening) return;
    this.#server = this.#create();
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (this.#server.address() as AddressInfo).port;
  }

  /** Closes the port: connections are refused until `up()`. */
  async down(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
