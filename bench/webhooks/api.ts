/**
 * The webhook bench's client side (bench/README.md "Webhooks"): apps, webhooks and releases made
 * through the Platform API of a running Slipway, and the receiver's view of what was delivered.
 * Every release is a `PATCH /apps/{app}/config-vars` that sets a config var named uniquely in the
 * run (`R<n>`) and unsets the app's previous one, so the release's description ("Set R12 and
 * remove R11 config vars"), carried in the `api:release` payload, names the release it belongs to.
 */
import { request, type Dispatcher } from 'undici';
import { signatureValid, type Received } from '../../test/helpers/webhook-receiver.js';

const ACCEPT = 'application/vnd.heroku+json; version=3.webhooks';

/** What the bench reads of its receiver (remote-receiver.ts): requests received up to the last `refresh()`. */
export interface ReceiverView {
  url: string;
  received: Received[];
  /** Brings `received` up to date. */
  refresh(): Promise<void>;
}

/** The API of one Slipway and the operator's key. */
export interface Api {
  url: string;
  apiKey: string;
  /** Keep-alive dispatcher shared by every call (one connection per app loop). */
  dispatcher: Dispatcher;
}

/** One release made by the bench: when it was sent and answered (Date.now(), ms). */
export interface ReleaseMade {
  app: string;
  /** The config var it set (`R<n>`): its key at the receiver. */
  name: string;
  sentAt: number;
  answeredAt: number;
  /** Round-trip time measured with performance.now(), ms. */
  ms: number;
}

/** Sends one API call and returns its status and text. @throws Error on a transport failure. */
async function call(api: Api, method: 'POST' | 'PATCH', path: string, body: unknown): Promise<{ status: number; text: string; secret?: string }> {
  const r = await request(`${api.url}${path}`, {
    method, dispatcher: api.dispatcher, body: JSON.stringify(body),
    headers: { authorization: `Bearer ${api.apiKey}`, accept: ACCEPT, 'content-type': 'application/json' },
  });
  const secret = r.headers['heroku-webhook-secret'];
  return { status: r.statusCode, text: await r.body.text(), secret: typeof secret === 'string' ? secret : undefined };
}

/** Creates app `name`. @throws Error unless the API answers 201. */
export async function createBenchApp(api: Api, name: string): Promise<void> {
  const r = await call(api, 'POST', '/apps', { name });
  if (r.status !== 201) throw new Error(`POST /apps ${name} answered ${r.status}: ${r.text.slice(0, 300)}`);
}

/**
 * Adds `count` `sync` webhooks for `api:release` and `api:formation` on app `app`, all to
 * `url` (each a subscription of its own, so each event is delivered `count` times). Each
 * webhook's secret (returned once, in `Heroku-Webhook-Secret`) is kept in `secrets` by webhook id.
 * @throws Error unless each create answers 201 with a secret
 */
export async function addWebhooks(api: Api, app: string, url: string, count: number, secrets: Map<string, string>): Promise<void> {
  for (let i = 0; i < count; i++) {
    const r = await call(api, 'POST', `/apps/${app}/webhooks`, { include: ['api:release', 'api:formation'], level: 'sync', url });
    if (r.status !== 201 || !r.secret) throw new Error(`POST /apps/${app}/webhooks answered ${r.status}: ${r.text.slice(0, 300)}`);
    secrets.set((JSON.parse(r.text) as { id: string }).id, r.secret);
  }
}

/**
 * How many requests the receiver got whose `Heroku-Webhook-Hmac-SHA256` does not verify under
 * the secret of the webhook named in their `webhook_metadata` (0 when every delivery is signed
 * as the platform signs).
 */
export function badSignatures(receiver: ReceiverView, secrets: Map<string, string>): number {
  let bad = 0;
  for (const r of receiver.received) {
    const secret = secrets.get((r.json as { webhook_metadata?: { webhook?: { id?: string } } } | undefined)?.webhook_metadata?.webhook?.id ?? '');
    if (secret === undefined || !signatureValid(secret, r.body, r.headers['heroku-webhook-hmac-sha256'])) bad++;
  }
  return bad;
}

let sequence = 0;
const lastVar = new Map<string, string>();

/**
 * Makes one release of `app` (PATCH config-vars: sets a new `R<n>`, unsets the app's previous one).
 * @throws Error unless the API answers 200
 */
export async function release(api: Api, app: string): Promise<ReleaseMade> {
  const name = `R${++sequence}`;
  const prev = lastVar.get(app);
  lastVar.set(app, name);
  const sentAt = Date.now();
  const t0 = performance.now();
  const r = await call(api, 'PATCH', `/apps/${app}/config-vars`, prev ? { [name]: '1', [prev]: null } : { [name]: '1' });
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`PATCH /apps/${app}/config-vars answered ${r.status}: ${r.text.slice(0, 300)}`);
  return { app, name, sentAt, answeredAt: Date.now(), ms };
}

/** The config var named in an `api:release` delivery's description (`Set R12 …`), or undefined. */
export function releaseKey(json: unknown): string | undefined {
  const j = json as { resource?: string; data?: { description?: string } } | undefined;
  if (j?.resource !== 'release') return undefined;
  return /^Set (R\d+)\b/.exec(j.data?.description ?? '')?.[1];
}

/** `api:release` deliveries received so far, by config var name (`R<n>`) → arrival times (ms). */
export function releaseArrivals(receiver: ReceiverView): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const r of receiver.received) {
    const key = releaseKey(r.json);
    if (key === undefined) continue;
    const list = out.get(key) ?? [];
    list.push(r.at);
    out.set(key, list);
  }
  return out;
}

/**
 * Waits until every release in `made` has reached the receiver `per` times (refreshing every 20 ms).
 * @returns the arrivals, by config var name
 * @throws Error naming how many are missing when `deadlineMs` passes first
 */
export async function awaitDeliveries(receiver: ReceiverView, made: ReleaseMade[], per: number, deadlineMs: number): Promise<Map<string, number[]>> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    await receiver.refresh();
    const arrivals = releaseArrivals(receiver);
    const missing = made.reduce((n, m) => n + Math.max(0, per - (arrivals.get(m.name)?.length ?? 0)), 0);
    if (missing === 0) return arrivals;
    if (Date.now() > until) throw new Error(`${missing} of ${made.length * per} api:release deliveries not received within ${deadlineMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
