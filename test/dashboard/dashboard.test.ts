/**
 * The dashboard in a real browser (Chromium via playwright-core): sign-in with the second
 * factor, then each area as a person uses it, checking the effect through the platform API.
 * Every page visited gets an axe-core check (no serious or critical violations) and a
 * screenshot under .tap/screenshots/dashboard.
 */
import t from 'tap';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { api, Browser, createAccount, walkAuthorization } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { chromiumSkip, launchBrowser, screenshotDir, seriousViolations, type TestBrowser } from '../helpers/browser.js';
import { signInPage, submitAndWait } from '../helpers/dashboard.js';
import { basic, http } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';

const skip = chromiumSkip();
const CONTAINER = 'application/vnd.slipway+json; version=3.container-releases';
const DAY = 86_400;

t.test('dashboard in Chromium', { skip }, async (t) => {
  const ts = await startInProcess();
  t.teardown(() => ts.stop());
  const shots = screenshotDir('dashboard');
  t.comment(`screenshots: ${shots}`);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = browser.context.pages()[0] ?? await browser.context.newPage();
  page.on('dialog', (d) => void d.accept());
  const key = ts.operator.apiKey;

  /** axe-core and a screenshot of the page as it is now. */
  async function look(p: Page, name: string): Promise<void> {
    await p.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
    const serious = await seriousViolations(p);
    t.same(serious, [], `${name}: no serious accessibility violations`);
  }
  const url = (path: string) => ts.auth + path;

  await t.test('sign in with e-mail, password and TOTP code', async (t) => {
    await signInPage(page, ts, ts.operator, '/account/applications');
    await look(page, 'sign-in');
    await page.click('button[type=submit]');
    t.equal(new URL(page.url()).pathname, '/account/applications', 'back at the page asked for');
    await page.goto(url('/'));
    t.match(await page.textContent('main'), `signed in as ${ts.operator.email}`);
    await look(page, 'home');
  });

  let scriptToken = '';
  let globalToken = '';
  await t.test('Applications: create a direct authorization, use it, revoke it', async (t) => {
    await page.goto(url('/account/applications'));
    await look(page, 'applications-empty');
    await page.fill('#description', 'deploy script');
    await page.uncheck('#create-scope-global');
    await page.check('#create-scope-read');
    await page.selectOption('#expires_in', String(30 * DAY));
    const created = await submitAndWait(page, '/account/authorizations', () => page.click('text=Create authorization'));
    t.equal(created.headers()['cache-control'], 'no-store', 'the page with the token is not stored');
    scriptToken = await page.inputValue('#secret');
    t.match(scriptToken, /^SVC-/, 'the token is shown');
    t.ok(await page.isVisible('button[data-copy]'), 'with a copy button');
    await look(page, 'authorization-created');

    t.equal((await api(ts, 'GET', '/apps', scriptToken)).status, 200, 'the token works against the API');
    t.equal((await api(ts, 'GET', '/account', scriptToken)).status, 403, 'within the scope chosen (read)');
    const listed = (await api(ts, 'GET', '/oauth/authorizations', key)).json.find((a: { description: string }) => a.description === 'deploy script');
    t.ok(listed.access_token.expires_in > 30 * DAY - 60 && listed.access_token.expires_in <= 30 * DAY, '30-day expiry');

    await page.goto(url('/account/applications'));
    t.notMatch(await page.content(), scriptToken, 'the token is never shown again');
    t.equal((await page.textContent('#direct-heading ~ table tbody tr td:nth-child(6)'))!.trim(), '2026-01-05 09:00 UTC', 'last used: when the API accepted it');
    t.equal((await page.textContent('#key-heading ~ p:nth-of-type(2)'))!.includes('Last used: Never'), false, 'the API key was used too (by this test)');
    t.match(await page.textContent('main'), 'deploy script');
    await look(page, 'applications');
    await page.click('button[aria-label="Revoke deploy script"]');
    await page.waitForURL(/notice=revoked/);
    t.match(await page.textContent('.notice'), 'Revoked');
    t.equal((await api(ts, 'GET', '/apps', scriptToken)).status, 401, 'the API refuses the revoked token');

    await page.fill('#description', 'ops');
    await submitAndWait(page, '/account/authorizations', () => page.click('text=Create authorization'));
    globalToken = await page.inputValue('#secret');
    await page.reload();
    t.notMatch(await page.content(), globalToken, 'a reload (the browser posts again) shows no token');
    t.match(await page.textContent('main'), 'already sent', 'and says why');
    t.equal((await api(ts, 'GET', '/oauth/authorizations', key)).json.filter((a: { description: string }) => a.description === 'ops').length, 1, 'and creates nothing');
    t.equal((await api(ts, 'GET', '/account', globalToken)).status, 200, 'a global direct authorization');
  });

  await t.test('OAuth clients: an error next to its field; create; secret shown once', async (t) => {
    await page.goto(url('/account/clients'));
    await page.fill('#name', 'Chart maker');
    await page.fill('#redirect_uri', 'not a url');
    await page.click('text=Register client');
    t.match(await page.textContent('#redirect_uri-error'), /^The redirect URI .* is not an absolute URL/, 'the error is next to the redirect URI field');
    t.equal(await page.getAttribute('#redirect_uri', 'aria-invalid'), 'true');
    await look(page, 'client-error');
    await page.fill('#redirect_uri', 'http://127.0.0.1:9/callback');
    await submitAndWait(page, '/account/clients', () => page.click('text=Register client'));
    t.match(await page.inputValue('#secret'), /\S{20,}/, 'client secret shown');
    await look(page, 'client-created');
    await page.click('text=Done');
    await look(page, 'client');
    await page.goto(url('/account/clients'));
    await look(page, 'clients');
  });

  const dev = await createAccount(ts, 'dev@example.com');
  await t.test('Teams: create; the last admin stays; members; a 90-day team token', async (t) => {
    await page.goto(url('/teams'));
    await page.fill('#name', 'blue-team');
    await page.click('text=Create team');
    await page.waitForURL(/\/teams\/blue-team/);
    await page.click(`button[aria-label="Remove ${ts.operator.email}"]`);
    await page.waitForLoadState();
    t.match(await page.textContent('main'), 'needs at least one admin', 'the last admin cannot be removed');
    await page.goto(url('/teams/blue-team'));
    await page.fill('#member-email', dev.email);
    await page.click('text=Add member');
    await page.waitForURL(/notice=member-saved/);
    const members = (await api(ts, 'GET', '/teams/blue-team/members', key)).json;
    t.same(members.map((m: { email: string; role: string }) => [m.email, m.role]).sort(), [[dev.email, 'member'], [ts.operator.email, 'admin']].sort());

    await page.selectOption('#expiry_days', '90');
    await page.fill('#token-description', 'ci');
    await submitAndWait(page, '/teams/blue-team/authorizations', () => page.click('text=Create team token'));
    const teamToken = await page.inputValue('#secret');
    await look(page, 'team-token-created');
    const listed = (await api(ts, 'GET', '/teams/blue-team/authorizations', key)).json.find((a: { description: string }) => a.description === 'ci');
    t.equal(listed.access_token.expires_in, 90 * DAY, 'expires_in is 90 days');
    t.equal((await api(ts, 'GET', '/teams/blue-team/apps', teamToken)).status, 200, 'the team token works');
    t.equal((await api(ts, 'GET', '/account', teamToken)).status, 403, 'and reaches only team resources');
  });

  await t.test('Teams: third-party access off refuses a third-party client, not a direct authorization', async (t) => {
    if ((await api(ts, 'POST', '/apps', key, { name: 'blue-app', team: 'blue-team' })).status !== 201) throw new Error('team app');
    const client = await api(ts, 'POST', '/oauth/clients', dev.apiKey, { name: 'Someone else\'s tool', redirect_uri: 'http://127.0.0.1:9/cb' });
    const team = (await api(ts, 'GET', '/teams/blue-team', key)).json;
    const other = new Browser(ts.auth);
    const back = await walkAuthorization(other, `${ts.auth}/oauth/authorize?client_id=${client.json.id}&response_type=code&scope=global&state=s1`, ts.operator, ts.clock, 'allow', { owner: team.id });
    const code = back.searchParams.get('code')!;
    const tokens = await http('POST', `${ts.auth}/oauth/token`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: client.json.id, client_secret: client.json.secret }).toString(),
    });
    const thirdParty = tokens.json.access_token as string;
    t.equal((await api(ts, 'GET', '/apps/blue-app', thirdParty)).status, 200, 'the third-party token reaches the team app while access is on');

    await page.goto(url('/teams/blue-team'));
    t.match(await page.textContent('#grants-heading + p + table'), 'Someone else\'s tool', 'the team\'s authorized applications list it');
    t.match(await page.textContent('main'), 'applications made by others', 'the switch explains what turning it off breaks');
    await look(page, 'team');
    await page.click('text=Turn off third-party access');
    await page.waitForURL(/notice=third-party-off/);
    t.equal((await api(ts, 'GET', '/apps/blue-app', thirdParty)).status, 403, 'the third-party token is refused on the team app');
    t.equal((await api(ts, 'GET', '/apps/blue-app', globalToken)).status, 200, 'a direct authorization still works');
    await page.goto(url('/teams'));
    await look(page, 'teams');
  });

  await t.test('Apps: releases, scale, roll back', async (t) => {
    const registry = { registry: ts.server.urls.registry, auth: basic('_', key) };
    const digests: string[] = [];
    for (const tag of ['v1', 'v2']) {
      const img = await buildImage(join(ts.server.config.dataDir, 'test-images', tag), sampleSpec({ config: { Cmd: ['./serve', tag] } }));
      await pushBuiltImage(registry, 'blue-app/web', tag, img);
      const r = await api(ts, 'PATCH', '/apps/blue-app/formation', key, { updates: [{ type: 'web', docker_image: img.configDigest }] }, { accept: CONTAINER });
      if (r.status !== 200) throw new Error(`release ${tag}: ${r.status} ${r.text}`);
      digests.push(img.configDigest);
    }
    await api(ts, 'PATCH', '/apps/blue-app/config-vars', key, { DATABASE_URL: 'postgres://db.internal/blue' });
    await page.goto(url('/apps'));
    await look(page, 'apps');
    await page.goto(url('/apps/blue-app/config'));
    t.match(await page.textContent('main'), 'DATABASE_URL', 'config vars shown to someone with the rights');
    t.notMatch(await page.content(), 'db.internal', 'with the value masked');
    await page.click('a[href="/apps/blue-app"]');
    await page.fill('#q-web', '3');
    await page.click('text=Scale web');
    await page.waitForURL(/notice=scaled/);
    t.equal((await api(ts, 'GET', '/apps/blue-app/formation/web', key)).json.quantity, 3, 'scaled through the page');
    await page.fill('#q-web', 'many');
    await page.click('text=Scale web');
    t.match(await page.textContent('#q-web-error'), 'quantity', 'a bad quantity is explained next to the field');
    await page.goto(url('/apps/blue-app'));
    await look(page, 'app');
    await page.click('button[aria-label="Roll back to v1"]');
    await page.waitForURL(/notice=rolled-back/);
    const releases = (await api(ts, 'GET', '/apps/blue-app/releases', key)).json;
    const newest = releases[releases.length - 1];
    // v1, v2 released by the API; v3 the config-var change (a config change is a release); v4 the roll back.
    t.equal(newest.version, 4);
    t.equal(releases[2].description, 'Set DATABASE_URL config vars', 'the config change made v3');
    t.equal(newest.rollback_of, 1, 'v4 rolls back to v1');
    t.equal(newest.processes.web.docker_image, digests[0], 'running v1\'s image');
    await look(page, 'app-rolled-back');
    // The README's picture: the first screen of this page at a small size.
    await page.setViewportSize({ width: 900, height: 1000 });
    await page.screenshot({ path: join(shots, 'readme.png') });
    await page.setViewportSize({ width: 1100, height: 800 });
  });

  await t.test('without JavaScript: confirmation page, then the action', async (t) => {
    const plain: TestBrowser = await launchBrowser(false);
    t.teardown(() => plain.close());
    const p = plain.context.pages()[0] ?? await plain.context.newPage();
    await signInPage(p, ts, dev, '/account/applications');
    await p.click('button[type=submit]');
    await p.fill('#description', 'no-js');
    await p.click('text=Create authorization');
    const token = await p.inputValue('#secret');
    t.notOk(await p.isVisible('button[data-copy]'), 'no copy button without a script');
    t.equal((await api(ts, 'GET', '/account', token)).status, 200);
    await p.goto(url('/account/applications'));
    await p.click('button[aria-label="Revoke no-js"]');
    t.match(await p.textContent('main'), 'cannot be undone', 'a confirmation page asks first');
    t.equal((await api(ts, 'GET', '/account', token)).status, 200, 'nothing revoked before confirming');
    await p.screenshot({ path: join(shots, 'confirm-no-js.png'), fullPage: true });
    await p.click('main button.danger');
    await p.waitForURL(/notice=revoked/);
    t.equal((await api(ts, 'GET', '/account', token)).status, 401, 'revoked after confirming');

    // A member (not an admin) sees the team without the admins' forms, and the rules of the API
    // refuse the admins' actions when posted anyway.
    await p.goto(url('/teams/blue-team'));
    t.match(await p.textContent('main'), 'managed by the team\'s admins');
    t.equal(await p.locator('text=Create team token').count(), 0, 'no team-token form for a member');
    await p.screenshot({ path: join(shots, 'team-member-no-js.png'), fullPage: true });
    const csrf = await p.inputValue('input[name="_csrf"]');
    const forged = await p.request.post(url('/teams/blue-team/authorizations'), { form: { _csrf: csrf, expiry_days: '30', scope: 'global' }, maxRedirects: 0 });
    t.equal(forged.status(), 403, 'a member cannot create team tokens');
    t.match(await forged.text(), 'Only admins of team blue-team');
    const noCsrf = await p.request.post(url('/account/authorizations'), { form: { description: 'forged', scope: 'global' }, maxRedirects: 0 });
    t.equal(noCsrf.status(), 403, 'a post without the CSRF token is refused');
    t.equal((await api(ts, 'GET', '/oauth/authorizations', dev.apiKey)).json.some((a: { description: string }) => a.description === 'forged'), false, 'and creates nothing');

    // The same confirmation page in the scripted browser (axe needs scripts): drop the dialog.
    await page.goto(url('/account/clients'));
    await page.click('text=Chart maker');
    await page.waitForURL(/\/account\/clients\/[^/?]+$/);
    await page.evaluate(() => {
      const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): Array<{ removeAttribute(n: string): void }> } }).document;
      for (const f of doc.querySelectorAll('form[data-confirm]')) f.removeAttribute('data-confirm');
    });
    await page.click('text=Delete client');
    t.match(await page.textContent('main'), 'Every authorization issued to it is revoked');
    await look(page, 'confirm');
    await page.click('text=Cancel');
    t.equal((await api(ts, 'GET', '/oauth/clients', key)).json.length, 1, 'cancel deletes nothing');
  });
});
