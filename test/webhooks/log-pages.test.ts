/**
 * Delivery and event lists of an app whose logs are longer than one page (docs/webhooks.md "For
 * users"): the platform's CLI asks `Range: seq ..; order=desc,max=1000` for "the 1000 most recent
 * deliveries", so a page must be the newest, not the newest of the oldest 1000. Through the
 * Platform API of an in-process server: 1,100 releases of one app, 1 s apart on the engine clock, with a `notify` webhook to a
 * closed loopback port (each delivery one refused attempt). Checked, for deliveries and events:
 * - the newest-first page of 1000 starts with the last release's (206, Next-Range), and the next
 *   page holds the other 100 (200, no Next-Range): every delivery once, in order;
 * - oldest first with a bound (`]<seq>..`) continues after it;
 * - `?eq[status]=` filters within the window.
 */
import t from 'tap';
import { createServer } from 'node:net';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { bearer, createApp, http } from '../helpers/http.js';

const RELEASES = 1100;
const APP = 'long-log';

/** A loopback port with nothing listening (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const ts = await startInProcess({ env: { SLIPWAY_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SLIPWAY_RATE_LIMIT_POOL: '1000000', SLIPWAY_RATE_LIMIT_PER_MINUTE: '1000000' } });
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;
const ACCEPT = 'application/vnd.heroku+json; version=3.webhooks';
const get = (path: string, range?: string) => http('GET', ts.api + path, { headers: { ...bearer(key), accept: ACCEPT, ...(range ? { range } : {}) } });

// Set-up before any assertion (tap ends a root test that asserted and then waits).
const created = await createApp(ts.api, key, APP);
if (created.status !== 201) throw new Error(`app: ${created.status} ${created.text}`);
const port = await closedPort();
const hook = await http('POST', `${ts.api}/apps/${APP}/webhooks`, {
  headers: { ...bearer(key), accept: ACCEPT, 'content-type': 'application/json' },
  body: JSON.stringify({ include: ['api:release'], level: 'notify', url: `http://127.0.0.1:${port}/hook` }),
});
if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${hook.text}`);

// 1,100 config changes, one after the other with the engine clock 1 s further each: one
// release (and one api:release event) each, in a creation order the clock makes unambiguous.
for (let i = 0; i < RELEASES; i++) {
  ts.clock.advance(1000);
  const r = await http('PATCH', `${ts.api}/apps/${APP}/config-vars`, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify({ [`V${i}`]: String(i) }) });
  if (r.status !== 200) throw new Error(`config change ${i}: ${r.status} ${r.text}`);
}
const releases = (await http('GET', `${ts.api}/apps/${APP}/releases`, { headers: { ...bearer(key), range: 'version ..; order=desc, max=1' } })).json as Array<{ version: number }>;
const lastVersion = releases[0]!.version;

type Delivery = { id: string; status: string; created_at: string; event: { id: string } };
type Event = { id: string; payload: { resource: string; data: { version: number } } };

/** Every page from `range` on, following Next-Range. */
async function allPages<T>(path: string, range: string): Promise<{ pages: Array<{ status: number; items: T[] }>; items: T[] }> {
  const pages: Array<{ status: number; items: T[] }> = [];
  for (let r: string | undefined = range; r !== undefined;) {
    const res = await get(path, r);
    pages.push({ status: res.status, items: res.json as T[] });
    r = res.headers['next-range'] as string | undefined;
    if (pages.length > 10) throw new Error('more pages than items');
  }
  return { pages, items: pages.flatMap((p) => p.items) };
}

t.test('deliveries: the most recent first, however long the log', async (t) => {
  await waitFor('every delivery attempted', async () => {
    const { items } = await allPages<Delivery>(`/apps/${APP}/webhook-deliveries`, 'seq ..; max=1000');
    return items.length === RELEASES && items.every((d) => d.status === 'failed');
  }, { timeoutMs: 120_000, intervalMs: 500 });
  const { pages, items } = await allPages<Delivery>(`/apps/${APP}/webhook-deliveries`, 'seq ..; order=desc,max=1000');
  t.same(pages.map((p) => [p.status, p.items.length]), [[206, 1000], [200, 100]], 'a page of 1000 (206), then the other 100 (200)');
  t.equal(new Set(items.map((d) => d.id)).size, RELEASES, 'every delivery once');
  t.ok(items.every((d, i) => i === 0 || d.created_at <= items[i - 1]!.created_at), 'newest first');
  const newestEvent = (await get(`/apps/${APP}/webhook-events/${items[0]!.event.id}`)).json as Event;
  t.equal(newestEvent.payload.data.version, lastVersion, `the first is the last release's (v${lastVersion})`);

  const asc = await get(`/apps/${APP}/webhook-deliveries`, 'seq ..; max=200');
  t.equal(asc.status, 206);
  const after = await get(`/apps/${APP}/webhook-deliveries`, asc.headers['next-range'] as string);
  t.same([...(asc.json as Delivery[]), ...(after.json as Delivery[])].map((d) => d.id), items.slice().reverse().slice(0, 400).map((d) => d.id), 'oldest first, the next page after the bound');
  const failed = await get(`/apps/${APP}/webhook-deliveries?eq[status]=failed`, 'seq ..; order=desc,max=5');
  t.same((failed.json as Delivery[]).map((d) => d.id), items.slice(0, 5).map((d) => d.id), 'status filter within the window');
  const none = await get(`/apps/${APP}/webhook-deliveries?eq[status]=succeeded`, 'seq ..; order=desc,max=5');
  t.same([none.status, none.json], [200, []], 'no delivery succeeded');
});

t.test('events: the most recent first, however long the log', async (t) => {
  const { pages, items } = await allPages<Event>(`/apps/${APP}/webhook-events`, 'seq ..; order=desc,max=1000');
  const all = RELEASES + 1; // and the app's creation (api:app)
  t.same(pages.map((p) => [p.status, p.items.length]), [[206, 1000], [200, all - 1000]], `a page of 1000 (206), then the other ${all - 1000} (200)`);
  t.equal(new Set(items.map((e) => e.id)).size, all, 'every event once');
  const releaseEvents = items.filter((e) => e.payload.resource === 'release');
  t.same(releaseEvents.map((e) => e.payload.data.version), Array.from({ length: RELEASES }, (_, i) => lastVersion - i), 'every release, newest first');
  t.equal(items[items.length - 1]!.payload.resource, 'app', 'the app\'s creation last');
});
