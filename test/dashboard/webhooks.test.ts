/**
 * An app's webhooks in the dashboard, in Chromium (playwright-core), with a real receiver on
 * loopback (test/helpers/webhook-receiver.ts; allowed by SLIPWAY_WEBHOOK_ALLOWED_HOSTS): add (a
 * refused URL first; the generated secret shown once, not on a reload), a config var change in
 * the dashboard delivered as `api:release` (signed with that secret, with the Authorization value
 * given) and then listed among the webhook's deliveries, edit, the overview's list, remove with a
 * confirmation page. Every new POST is refused without its CSRF token, for an account that is
 * not a collaborator (404, as the API answers) and from a read-only sign-in (403), changing
 * nothing. The secret and the Authorization value are in no page but the one-time one, nor in the
 * server's log. Every page is looked at with axe-core and at 1280 and 390 px.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, Browser as HttpBrowser, createAccount, findForm, signIn } from '../helpers/oauth.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { chromiumSkip } from '../helpers/browser.js';
import { assertLook, dashboardPage, signInAgain, signInPage, withoutConfirmDialogs } from '../helpers/dashboard.js';
import { tempDir } from '../helpers/server.js';
import { signatureValid, startReceiver } from '../helpers/webhook-receiver.js';

const skip = chromiumSkip();
const AUTHORIZATION = 'Bearer hook-token-7f3a9c';
const GIVEN_SECRET = 'given-secret-5b1e22d0';

t.test('dashboard webhooks in Chromium', { skip }, async (t) => {
  const logs = tempDir();
  t.teardown(() => logs.cleanup());
  const logFile = join(logs.dir, 'slipway.log');
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const ts = await startInProcess({
    env: { SLIPWAY_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SLIPWAY_WEBHOOK_TIMEOUT: '2', SLIPWAY_WEBHOOK_POLL_INTERVAL: '0.1', SLIPWAY_LOG_LEVEL: 'debug', SLIPWAY_LOG_FILE: logFile },
  });
  t.teardown(() => ts.stop());
  const { page, shots } = await dashboardPage(t, 'dashboard-webhooks');
  const key = ts.operator.apiKey;
  const url = (path: string) => ts.auth + path;
  const hooks = async () => (await api(ts, 'GET', '/apps/shop/webhooks', key)).json as Array<{ id: string; url: string; include: string[]; level: string }>;

  const look = (name: string) => assertLook(t, page, shots, name);

  t.equal((await api(ts, 'POST', '/apps', key, { name: 'shop' })).status, 201);
  await signInPage(page, ts, ts.operator, '/apps/shop');
  await page.click('button[type=submit]');
  await page.waitForURL(url('/apps/shop'));
  let secret = '';
  let first = '';

  await t.test('empty states, a refused URL, then add: the generated secret is shown once', async (t) => {
    t.match(await page.textContent('#webhooks-heading + p'), 'No webhooks yet', 'the overview says there are none');
    await page.click('main a:has-text("Add a webhook")');
    await page.waitForURL(url('/apps/shop/webhooks'));
    t.equal(await page.getAttribute('nav.tabs a[href="/apps/shop/webhooks"]', 'aria-current'), 'page', 'the Webhooks tab is the current one');
    t.match(await page.textContent('main .empty'), 'No webhooks yet: add one below');
    await look('webhooks-empty');

    await page.fill('#add-url', 'https://10.1.2.3/hook');
    await page.fill('#add-authorization', AUTHORIZATION);
    await page.click('button:has-text("Add webhook")');
    t.match(await page.textContent('#add-url-error'), /The URL points to a .*private/, 'a private address is refused next to the URL field');
    t.notMatch(await page.content(), AUTHORIZATION, 'the Authorization typed is not echoed into the page');
    t.equal(await page.inputValue('#add-url'), 'https://10.1.2.3/hook', 'the URL is kept for correction');
    t.same(await hooks(), [], 'nothing was created');

    await page.fill('#add-url', receiver.url);
    await page.uncheck('#add-include-api-release');
    await page.click('button:has-text("Add webhook")');
    t.match(await page.textContent('#add-include-error'), 'The entity list must be a non-empty', 'no entity chosen: refused next to the entities');
    t.same(await hooks(), [], 'still nothing created');

    await page.check('#add-include-api-release');
    await page.selectOption('#add-level', 'notify');
    await page.fill('#add-authorization', AUTHORIZATION);
    await page.click('button:has-text("Add webhook")');
    await page.waitForSelector('#secret');
    secret = await page.inputValue('#secret');
    t.match(secret, /^[0-9a-f]{64}$/, 'the generated signing secret is on the result page');
    t.notMatch(await page.content(), AUTHORIZATION, 'but not the Authorization value');
    const list = await hooks();
    t.match(list, [{ url: receiver.url, include: ['api:release'], level: 'notify' }], 'the API lists the webhook added through the page');
    first = list[0]!.id;
    await look('webhook-secret');
    const again = await page.reload();
    t.equal(again!.status(), 409, 'reloading the result page posts nothing again');
    t.notMatch(await page.content(), secret, 'and does not show the secret again');
    t.equal((await hooks()).length, 1, 'no second webhook');
  });

  await t.test('a config var change makes a release, delivered and listed among the deliveries', async (t) => {
    await page.goto(url('/apps/shop/config'));
    await page.fill('#var-name', 'GREETING');
    await page.fill('#var-value', 'hello');
    await page.click('text=Add config var');
    await page.waitForURL(/notice=config-set/);
    const got = await waitFor('the receiver to get the api:release event', () => receiver.received.find((r) => r.json?.resource === 'release'), { timeoutMs: 15_000, intervalMs: 50 });
    t.equal(got.json.action, 'create');
    t.equal(got.json.webhook_metadata?.webhook?.id, first, 'from the webhook added in the dashboard');
    t.ok(signatureValid(secret, got.body, got.headers['heroku-webhook-hmac-sha256']), 'signed with the secret the page showed');
    t.equal(got.headers.authorization, AUTHORIZATION, 'with the Authorization value given');
    await page.goto(url(`/apps/shop/webhooks/${first}`));
    const row = await waitFor('the delivery to be recorded as succeeded', async () => {
      await page.reload();
      const text = await page.textContent('main table.deliveries tbody tr') ?? '';
      return text.includes('succeeded') ? text : undefined;
    }, { timeoutMs: 15_000, intervalMs: 100 });
    t.match(row, 'api:release create', 'the event entity and action');
    const cell = async (label: string) => (await page.textContent(`main table.deliveries tbody tr td[data-label="${label}"]`))?.trim();
    t.equal(await cell('Last response'), 'HTTP 200', 'the last response code');
    t.equal(await cell('Attempts'), '1', 'one attempt');
    t.equal(await cell('Next attempt'), '—', 'none due');
    t.match(await cell('Created'), /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/, 'when it was created');
    t.equal(await page.locator('main table.deliveries tbody tr').count(), 1, 'one delivery');
    t.notMatch(await page.content(), secret, 'the webhook page does not show the secret');
    t.notMatch(await page.content(), AUTHORIZATION, 'nor the Authorization value');
    t.match(await page.textContent('dl.facts'), 'Authorization', 'it says an Authorization value is set');
    await look('webhook');
  });

  await t.test('edit: a refused URL changes nothing, then entities and level are saved', async (t) => {
    await page.fill('#edit-url', 'http://example.com/hook');
    await page.click('button:has-text("Save webhook")');
    t.match(await page.textContent('#edit-url-error'), 'The URL must be an https URL', 'an http URL to a host not allowed is refused');
    t.match(await hooks(), [{ url: receiver.url, level: 'notify' }], 'unchanged');
    await page.fill('#edit-url', receiver.url);
    await page.check('#edit-include-api-formation');
    await page.selectOption('#edit-level', 'sync');
    await page.click('button:has-text("Save webhook")');
    await page.waitForURL(/notice=webhook-saved/);
    t.match(await hooks(), [{ id: first, include: ['api:formation', 'api:release'], level: 'sync' }], 'saved through the engine');
    t.match(await page.textContent('dl.facts'), /sync/, 'the page shows the new level');
  });

  await t.test('a webhook with a secret given: not shown back; the overview lists both', async (t) => {
    await page.goto(url('/apps/shop/webhooks'));
    await page.fill('#add-url', `${receiver.url}/second`);
    await page.check('#add-include-api-app');
    await page.uncheck('#add-include-api-release');
    await page.fill('#add-secret', GIVEN_SECRET);
    await page.click('button:has-text("Add webhook")');
    await page.waitForURL(/\/apps\/shop\/webhooks\/[0-9a-f-]{36}\?notice=webhook-created/);
    t.notMatch(await page.content(), GIVEN_SECRET, 'the secret given is not shown back');
    t.match(await page.textContent('main .empty'), 'No deliveries yet');
    t.equal((await hooks()).length, 2);
    await page.goto(url('/apps/shop/webhooks'));
    await look('webhooks');
    await page.goto(url('/apps/shop'));
    const table = await page.textContent('section[aria-labelledby="webhooks-heading"] table') ?? '';
    t.match(table, receiver.url, 'the overview lists the webhooks');
    t.match(table, `${receiver.url}/second`);
    t.match(table, 'api:formation');
    await look('app-webhooks');
  });

  const dev = await createAccount(ts, 'dev@example.com');
  await t.test('every new POST: refused without the CSRF token, and for someone not a collaborator', async (t) => {
    const posts: Array<[string, Record<string, string>]> = [
      ['/apps/shop/webhooks', { url: `${receiver.url}/forged`, include: 'api:release', level: 'notify', _once: 'x' }],
      [`/apps/shop/webhooks/${first}`, { url: `${receiver.url}/forged`, include: 'api:app', level: 'notify' }],
      [`/apps/shop/webhooks/${first}/remove`, { confirmed: 'yes' }],
    ];
    const before = await hooks();
    for (const [path, form] of posts) {
      const r = await page.request.post(url(path), { form, maxRedirects: 0 });
      t.equal(r.status(), 403, `${path} without the CSRF token: 403`);
    }
    const other = new HttpBrowser(ts.auth);
    t.equal((await signIn(other, dev, ts.clock, '/apps')).status, 303, 'dev signed in');
    const csrf = findForm((await other.get('/apps')).text, '/logout').fields._csrf!;
    const viaApi = [
      await api(ts, 'POST', '/apps/shop/webhooks', dev.apiKey, { url: `${receiver.url}/forged`, include: ['api:release'], level: 'notify' }),
      await api(ts, 'PATCH', `/apps/shop/webhooks/${first}`, dev.apiKey, { level: 'notify' }),
      await api(ts, 'DELETE', `/apps/shop/webhooks/${first}`, dev.apiKey),
    ];
    for (const [i, [path, form]] of posts.entries()) {
      const r = await other.post(path, { _csrf: csrf, ...form });
      t.equal(r.status, 404, `${path} by an account that is not a collaborator: 404`);
      t.equal(r.status, viaApi[i]!.status, 'as the API answers');
    }
    t.equal((await other.get('/apps/shop/webhooks')).status, 404, 'nor can it see the list');
    t.equal((await other.get(`/apps/shop/webhooks/${first}`)).status, 404, 'nor a webhook');
    t.same(await hooks(), before, 'no webhook created, changed or removed');
  });

  await t.test('a read-only sign-in sees the webhooks without forms, and its posts are refused', async (t) => {
    await signInAgain(page, ts, ts.operator, '/apps/shop/webhooks', true);
    for (const path of ['/apps/shop', '/apps/shop/webhooks', `/apps/shop/webhooks/${first}`]) {
      await page.goto(url(path));
      t.equal(await page.locator('main form').count(), 0, `${path}: no forms`);
    }
    t.match(await page.textContent('main table.deliveries'), 'succeeded', 'the deliveries are visible read-only');
    await look('read-only-webhook');
    const csrf = await page.inputValue('header input[name="_csrf"]');
    const before = await hooks();
    const posts: Array<[string, Record<string, string>]> = [
      ['/apps/shop/webhooks', { url: `${receiver.url}/forged`, include: 'api:release', level: 'notify', _once: 'x' }],
      [`/apps/shop/webhooks/${first}`, { url: `${receiver.url}/forged`, include: 'api:app', level: 'notify' }],
      [`/apps/shop/webhooks/${first}/remove`, { confirmed: 'yes' }],
    ];
    for (const [path, form] of posts) {
      const r = await page.request.post(url(path), { form: { _csrf: csrf, ...form }, maxRedirects: 0 });
      t.equal(r.status(), 403, `${path} from a read-only session: 403`);
    }
    t.same(await hooks(), before, 'nothing changed');
    await signInAgain(page, ts, ts.operator, '/apps/shop');
  });

  await t.test('remove with confirmation (without a script: a confirmation page)', async (t) => {
    await page.goto(url(`/apps/shop/webhooks/${first}`));
    await withoutConfirmDialogs(page);
    await page.click('text=Remove webhook');
    t.match(await page.textContent('main .warning'), 'receives no more events', 'the confirmation says what removing does');
    t.equal((await hooks()).length, 2, 'nothing removed before confirming');
    await look('webhook-remove-confirm');
    await page.click('main button.danger');
    await page.waitForURL(/\/apps\/shop\/webhooks\?notice=webhook-removed/);
    t.same((await hooks()).map((w) => w.id).includes(first), false, 'removed through the engine');
    t.equal((await hooks()).length, 1, 'the other one stays');
    t.equal(await page.locator(`main a[href$="${first}"]`).count(), 0, 'the list no longer shows it');
  });

  t.test('neither the secret nor the Authorization value is in the log', async (t) => {
    const log = readFileSync(logFile, 'utf8');
    t.ok(log.length > 0, 'the server logged');
    for (const s of [secret, AUTHORIZATION, GIVEN_SECRET]) t.notOk(log.includes(s), 'not logged');
  });
});
