/**
 * The dashboard's home, apps, config vars and app settings in Chromium (playwright-core), with a
 * real push to the registry feeding what runs: create, scale with a size from the list,
 * config vars masked until revealed (each change a release, checked through the API), move into
 * a team, rename (by a team admin; the image then pulls under the new name), delete with confirmation. Every page is looked at with axe-core and at 1280 and 390 px
 * (document width ≤ viewport); every new POST is refused without its CSRF token and, for another
 * account, by the API's access rules, changing nothing.
 */
import t from 'tap';
import { join } from 'node:path';
import { api, Browser as HttpBrowser, createAccount, findForm, registerClient, signIn } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { chromiumSkip } from '../helpers/browser.js';
import { assertLook, dashboardPage, signInAgain, signInPage, submitAndWait, withoutConfirmDialogs } from '../helpers/dashboard.js';
import { basic } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';

const skip = chromiumSkip();
const CONTAINER = 'application/vnd.slipway+json; version=3.container-releases';
const SECRET = 'postgres://app:s3cr3t-value@db.internal/shop';
/** Each POST this change added, with a form that would change something (apps scratch and shop, team ops). */
const NEW_POSTS: Array<[string, Record<string, string>]> = [
  ['/apps', { name: 'forged' }],
  ['/apps/scratch/config', { name: 'FORGED', value: 'x' }],
  ['/apps/shop/config/reveal', {}],
  ['/apps/shop/config/remove', { name: 'KEEP', confirmed: 'yes' }],
  ['/apps/scratch/transfer', { team: 'ops', confirmed: 'yes' }],
  ['/apps/scratch/rename', { name: 'forged-name', confirmed: 'yes' }],
  ['/apps/shop/delete', { confirmed: 'yes' }],
];

t.test('dashboard apps and config vars in Chromium', { skip }, async (t) => {
  const ts = await startInProcess();
  t.teardown(() => ts.stop());
  const { page, shots } = await dashboardPage(t, 'dashboard-apps');
  const key = ts.operator.apiKey;
  const url = (path: string) => ts.auth + path;

  const look = (name: string) => assertLook(t, page, shots, name);
  const releases = async (app: string) => (await api(ts, 'GET', `/apps/${app}/releases`, key)).json as Array<{ version: number; description: string }>;

  await signInPage(page, ts, ts.operator, '/');
  await page.click('button[type=submit]');
  await page.waitForURL(url('/'));

  await t.test('home and apps list: empty states, then create an app (an error first)', async (t) => {
    t.match(await page.textContent('main'), 'You have no personal apps yet', 'the home says there are no apps');
    t.equal(await page.getAttribute('header nav a[href="/"]', 'aria-current'), 'page', 'the navigation shows where you are');
    await look('home-empty');
    await page.click('text=Create an app');
    await page.fill('#app-name', 'Bad Name');
    await page.click('button:has-text("Create app")');
    t.match(await page.textContent('#app-name-error'), 'lowercase letters', 'a bad name is explained next to the field');
    t.equal((await api(ts, 'GET', '/apps', key)).json.length, 0, 'and nothing is created');
    await page.fill('#app-name', 'shop');
    await page.click('button:has-text("Create app")');
    await page.waitForURL(/\/apps\/shop\?notice=app-created/);
    const app = (await api(ts, 'GET', '/apps/shop', key)).json;
    t.equal(app.owner.email, ts.operator.email, 'created through the page, owned by the person');
    t.match(await page.textContent('dl.facts'), ts.operator.email, 'the owner is shown as the account\'s e-mail');
  });

  await t.test('what runs: a pushed image released, scaled with a size from the list', async (t) => {
    const registry = { registry: ts.server.urls.registry, auth: basic('_', key) };
    const img = await buildImage(join(ts.server.config.dataDir, 'test-images', 'shop'), sampleSpec({ config: { Cmd: ['./serve'] } }));
    await pushBuiltImage(registry, 'shop/web', 'v1', img);
    const r = await api(ts, 'PATCH', '/apps/shop/formation', key, { updates: [{ type: 'web', docker_image: img.configDigest }] }, { accept: CONTAINER });
    t.equal(r.status, 200, 'released');
    await page.goto(url('/apps/shop'));
    t.same(await page.$$eval('#s-web option', (os) => os.map((o) => (o as unknown as { value: string }).value)).then((v) => v.includes('performance-M') && v.includes('standard-1X')), true, 'the size is a list of the known sizes');
    await page.fill('#q-web', '2');
    await page.selectOption('#s-web', 'performance-M');
    await page.click('text=Scale web');
    await page.waitForURL(/notice=scaled/);
    const f = (await api(ts, 'GET', '/apps/shop/formation/web', key)).json;
    t.same([f.quantity, f.size], [2, 'performance-M'], 'scaled through the page');
    await look('app');
    await page.goto(url('/'));
    const card = await page.textContent('main .cards article');
    t.match(card, /web: 2 × performance-M/, 'the home shows what runs');
    t.match(card, 'release v1', 'and the current release');
    await look('home');
    await page.goto(url('/apps'));
    t.match(await page.textContent('main table'), ts.operator.email, 'the apps list names the owner by e-mail');
    await look('apps');
  });

  await t.test('config vars: add, masked until revealed, edit, remove; each a release', async (t) => {
    await page.goto(url('/apps/shop/config'));
    t.match(await page.textContent('main'), 'No config vars yet');
    await look('config-empty');
    const before = (await releases('shop')).length;
    await page.fill('#var-name', '1BAD');
    await page.fill('#var-value', SECRET);
    await page.click('text=Add config var');
    t.match(await page.textContent('#var-name-error'), 'not a valid config var name', 'a bad name is explained next to the field');
    t.notMatch(await page.content(), SECRET, 'the refused value is not echoed into the page');
    t.equal((await releases('shop')).length, before, 'and no release is made');
    await page.fill('#var-name', 'DATABASE_URL');
    await page.fill('#var-value', SECRET);
    await page.click('text=Add config var');
    await page.waitForURL(/notice=config-set/);
    t.equal((await api(ts, 'GET', '/apps/shop/config-vars', key)).json.DATABASE_URL, SECRET, 'set through the page');
    const rs = await releases('shop');
    t.equal(rs.length, before + 1, 'a release was made');
    t.equal(rs[rs.length - 1]!.description, 'Set DATABASE_URL config vars');
    t.notMatch(await page.content(), SECRET, 'the value is not in the page');
    t.match(await page.textContent('main table'), '••••', 'it is masked');
    await look('config');

    const revealed = await submitAndWait(page, '/apps/shop/config/reveal', () => page.click('text=Reveal values'));
    t.equal(revealed.headers()['cache-control'], 'no-store', 'the revealing page is not stored');
    t.match(await page.textContent('main table'), SECRET, 'revealed on request');
    await look('config-revealed');
    await page.goto(url('/apps/shop/config'));
    t.notMatch(await page.content(), SECRET, 'hidden again on the next visit');

    await page.fill('input[aria-label="New value of DATABASE_URL"]', 'postgres://db.internal/shop2');
    await page.click('button[aria-label="Save DATABASE_URL"]');
    await page.waitForURL(/notice=config-set/);
    t.equal((await api(ts, 'GET', '/apps/shop/config-vars', key)).json.DATABASE_URL, 'postgres://db.internal/shop2', 'edited');
    t.equal((await releases('shop')).length, before + 2, 'another release');
    await page.click('button[aria-label="Remove DATABASE_URL"]');
    await page.waitForURL(/notice=config-removed/);
    t.same((await api(ts, 'GET', '/apps/shop/config-vars', key)).json, {}, 'removed');
    const last = (await releases('shop')).at(-1)!;
    t.same([last.version, last.description], [before + 3, 'Remove DATABASE_URL config vars'], 'a release without it');
  });

  const dev = await createAccount(ts, 'dev@example.com');
  await t.test('settings: move into a team, then the team sees it; owner is the team', async (t) => {
    t.equal((await api(ts, 'POST', '/teams', key, { name: 'ops' })).status, 201);
    t.equal((await api(ts, 'PUT', '/teams/ops/members', key, { email: dev.email, role: 'member' })).status, 200, 'dev is a member of ops');
    await page.goto(url('/apps/shop/settings'));
    t.match(await page.textContent('main'), 'moves the app\'s registry repositories with it', 'the rename form says what moves');
    await look('settings');
    await page.selectOption('#transfer-team', 'ops');
    await page.click('text=Move into team');
    await page.waitForURL(/notice=transferred/);
    t.equal((await api(ts, 'GET', '/apps/shop', key)).json.team?.name, 'ops', 'the app belongs to the team');
    t.match(await page.textContent('dl.facts'), 'team ops', 'the owner is shown as the team');
    t.equal((await api(ts, 'GET', '/apps/shop', dev.apiKey)).status, 200, 'the team member reaches it');
  });

  await t.test('rename by a team admin: an error next to the field first, then confirmed; the image pulls under the new name', async (t) => {
    await page.goto(url('/apps/shop/settings'));
    await page.fill('#rename-name', 'Bad Name');
    await page.click('button:has-text("Rename app")');
    t.match(await page.textContent('#rename-error'), 'lowercase letters', 'a bad name is explained next to the field');
    t.equal((await api(ts, 'GET', '/apps/shop', key)).status, 200, 'nothing renamed');
    await look('rename-error');
    await page.fill('#rename-name', 'shop-two');
    await page.click('button:has-text("Rename app")');
    await page.waitForURL(/\/apps\/shop-two\/settings\?notice=renamed/);
    t.match(await page.textContent('dl.facts'), 'shop-two', 'the page shows the new name');
    t.equal((await api(ts, 'GET', '/apps/shop-two', key)).json.team?.name, 'ops', 'the app is renamed and still the team\'s');
    const registry = ts.server.urls.registry;
    t.equal((await fetch(`${registry}/v2/shop-two/web/manifests/v1`, { headers: { ...basic('_', key), accept: 'application/vnd.docker.distribution.manifest.v2+json' } })).status, 200, 'its image pulls under the new name');
    t.equal((await api(ts, 'PATCH', '/apps/shop-two', key, { name: 'shop' })).status, 200, 'renamed back through the API');
  });

  await t.test('every new POST: refused without the CSRF token and by the API\'s access rules', async (t) => {
    t.equal((await api(ts, 'POST', '/apps', key, { name: 'scratch' })).status, 201);
    await api(ts, 'PATCH', '/apps/shop/config-vars', key, { KEEP: 'kept' });
    for (const [path, form] of NEW_POSTS) {
      const r = await page.request.post(url(path), { form, maxRedirects: 0 });
      t.equal(r.status(), 403, `${path} without the CSRF token: 403`);
      t.notMatch(await r.text(), 'kept', 'no value in the refusal');
    }
    // dev: a member of ops (shop's team, not an admin) and a stranger to scratch (personal).
    const other = new HttpBrowser(ts.auth);
    t.equal((await signIn(other, dev, ts.clock, '/apps')).status, 303, 'dev signed in');
    const csrf = findForm((await other.get('/apps')).text, '/logout').fields._csrf!;
    const as = async (path: string, form: Record<string, string>) => other.post(path, { _csrf: csrf, ...form });
    t.equal((await as('/apps/scratch/config', { name: 'FORGED', value: 'x' })).status, 404, 'another\'s app: not found, as the API answers');
    t.equal((await as('/apps/scratch/transfer', { team: 'ops', confirmed: 'yes' })).status, 404);
    t.equal((await as('/apps/scratch/delete', { confirmed: 'yes' })).status, 404);
    t.equal((await as('/apps/scratch/rename', { name: 'forged-name', confirmed: 'yes' })).status, 404);
    const rename = await as('/apps/shop/rename', { name: 'forged-name', confirmed: 'yes' });
    t.equal(rename.status, 403, 'a team member who is not an admin may not rename');
    t.match(rename.text, 'Only the owner of shop can rename it');
    t.equal((await as('/apps/shop/config/reveal', {})).status, 200, 'a team member may read config vars (as GET /apps/shop/config-vars)');
    const del = await as('/apps/shop/delete', { confirmed: 'yes' });
    t.equal(del.status, 403, 'a team member who is not an admin may not delete');
    t.match(del.text, 'Only the owner of shop');
    t.equal((await as('/apps', { name: 'shop', team: 'ops' })).status, 409, 'a taken name: conflict');
    t.same((await api(ts, 'GET', '/apps', key)).json.map((a: { name: string }) => a.name).sort(), ['scratch', 'shop'], 'no app created, moved or deleted');
    t.same((await api(ts, 'GET', '/apps/scratch/config-vars', key)).json, {}, 'no config var set');
    t.same((await api(ts, 'GET', '/apps/shop/config-vars', key)).json, { KEEP: 'kept' }, 'nor removed');
    t.equal((await api(ts, 'GET', '/apps/scratch', key)).json.team, null, 'scratch still personal');
  });

  await t.test('a read-only sign-in sees no write controls, and its posts are refused', async (t) => {
    const client = await registerClient(ts, key);
    await signInAgain(page, ts, ts.operator, '/apps/shop', true);
    t.match(await page.textContent('header'), 'read-only', 'the header says the session is read-only');
    for (const path of ['/', '/apps', '/apps/shop', '/apps/shop/config', '/apps/shop/webhooks', '/apps/shop/settings', '/teams/ops', '/account/applications', '/account/clients']) {
      await page.goto(url(path));
      t.equal(await page.locator('main form').count(), 0, `${path}: no forms`);
    }
    t.match(await page.goto(url('/apps/shop/config')).then(() => page.textContent('main')), 'Config vars are hidden', 'config vars need more than read');
    await page.goto(url('/apps/shop'));
    await look('read-only-app');
    const csrf = await page.inputValue('header input[name="_csrf"]');
    const posts: Array<[string, Record<string, string>]> = [
      ...NEW_POSTS, ['/apps/shop/formation/web', { quantity: '0', size: 'eco' }], ['/account/authorizations', { description: 'forged', scope: 'global' }],
    ];
    for (const [path, form] of posts) {
      const r = await page.request.post(url(path), { form: { _csrf: csrf, ...form }, maxRedirects: 0 });
      t.equal(r.status(), 403, `${path} from a read-only session: 403`);
      t.notMatch(await r.text(), 'kept', 'no value in the refusal');
    }
    t.same((await api(ts, 'GET', '/apps', key)).json.map((a: { name: string }) => a.name).sort(), ['scratch', 'shop'], 'no app created, moved or deleted');
    t.same((await api(ts, 'GET', '/apps/shop/config-vars', key)).json, { KEEP: 'kept' }, 'no config var changed');
    t.equal((await api(ts, 'GET', '/apps/shop/formation/web', key)).json.quantity, 2, 'not scaled');
    const consent = await page.goto(url(`/oauth/authorize?client_id=${client.id}&response_type=code&scope=global&state=s1`));
    t.equal(consent!.status(), 403, 'a read-only session cannot approve an application');
    t.match(await page.textContent('main'), 'signed in read-only');
    await page.goto(url('/'));
    await signInAgain(page, ts, ts.operator, '/apps');
  });

  await t.test('delete with confirmation (without a script: a confirmation page)', async (t) => {
    const catalog0 = await fetch(`${ts.server.urls.registry}/v2/_catalog`, { headers: basic('_', key) });
    t.same((await catalog0.json() as { repositories: string[] }).repositories, ['shop/web'], 'the app has a repository');
    await page.goto(url('/apps/shop/settings'));
    await withoutConfirmDialogs(page);
    await page.click('text=Delete app');
    t.match(await page.textContent('main'), 'garbage collection', 'the confirmation explains what goes, and GC');
    t.equal((await api(ts, 'GET', '/apps/shop', key)).status, 200, 'nothing deleted before confirming');
    await look('delete-confirm');
    await page.click('main button.danger');
    await page.waitForURL(/\/apps\?notice=app-deleted/);
    t.equal((await api(ts, 'GET', '/apps/shop', key)).status, 404, 'the app is gone');
    const catalog = await fetch(`${ts.server.urls.registry}/v2/_catalog`, { headers: basic('_', key) });
    t.same((await catalog.json() as { repositories: string[] }).repositories, [], 'and its registry repository');
    t.notMatch(await page.textContent('main table'), /\bshop\b/, 'the list no longer shows it');
  });
});
