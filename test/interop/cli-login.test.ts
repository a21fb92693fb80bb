/**
 * `heroku login` (the stock CLI 11.10.0, unmodified, browser flow) against the auth host:
 * HEROKU_LOGIN_HOST points at it, the CLI prints the browser URL, Debian's Chromium (via
 * playwright-core) signs in with password and TOTP and answers the confirmation page. Asserted
 * as a user sees it: the CLI's exit code and output, ~/.netrc, and the token at work through
 * `heroku auth:whoami` and `heroku authorizations`. Screenshots under .tap/screenshots/cli-login.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { api } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { chromiumSkip, launchBrowser, screenshotDir, seriousViolations } from '../helpers/browser.js';
import { heroku, herokuLogin } from '../helpers/platform-cli.js';
import { totpCode, TOTP_STEP_SECONDS } from '../../engine/identity/totp.js';

const skip = chromiumSkip();
const DESCRIPTION = `Heroku CLI login from ${hostname()}`;

t.test('heroku login in the browser', { skip }, async (t) => {
  // A poll waits up to 20 s; the CLI polls four times, so a slow machine still has 80 s.
  const ts = await startInProcess({ env: { SLIPWAY_CLI_LOGIN_POLL_WAIT: '20' } });
  t.teardown(() => ts.stop());
  const shots = screenshotDir('cli-login');
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = browser.context.pages()[0] ?? await browser.context.newPage();
  const key = ts.operator.apiKey;
  const cliLogins = async () => ((await api(ts, 'GET', '/oauth/authorizations', key)).json as Array<{ description: string }>).filter((a) => a.description === DESCRIPTION);
  const look = async (t: Test, p: Page, name: string) => {
    await p.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
    t.same(await seriousViolations(p), [], `${name}: no serious accessibility violations`);
  };
  const newHome = () => {
    const home = mkdtempSync(join(tmpdir(), 'slipway-cli-login-'));
    t.teardown(() => rmSync(home, { recursive: true, force: true }));
    return home;
  };

  await t.test('sign-in with the second factor, confirm, and the CLI is logged in', async (t) => {
    const home = newHome();
    const run = herokuLogin(ts.api, ts.auth, home);
    const url = await run.url;
    t.match(url, new RegExp(`^${ts.auth}/auth/cli/browser/[A-Za-z0-9_-]{43}$`), 'the CLI prints the auth host\'s browser URL');

    await page.goto(url);
    t.equal(new URL(page.url()).pathname, '/login', 'sign-in comes first');
    ts.clock.advance(TOTP_STEP_SECONDS * 1000);
    await page.fill('#email', ts.operator.email);
    await page.fill('#password', ts.operator.password);
    const good = totpCode(ts.operator.totpSecret, ts.clock.now());
    await page.fill('#code', good === '000000' ? '111111' : '000000');
    await page.click('button[type=submit]');
    t.match(await page.textContent('[role=alert]'), /authentication code is wrong/, 'a wrong TOTP code is refused');
    t.equal(new URL(page.url()).pathname, '/login', 'still on the sign-in page');
    t.same(await cliLogins(), [], 'a wrong TOTP code yields no token');

    await page.fill('#password', ts.operator.password);
    await page.fill('#code', good);
    await page.click('button[type=submit]');
    await page.waitForURL(url);
    t.match(await page.textContent('main'), `Log in the platform CLI on ${DESCRIPTION} as ${ts.operator.email}?`);
    await look(t, page, 'confirm');
    await page.click('button[value=allow]');
    await page.waitForLoadState();
    t.match(await page.textContent('h1'), 'CLI logged in');
    await look(t, page, 'logged-in');

    const r = await run.done;
    t.equal(r.code, 0, `heroku login exits 0${r.code === 0 ? '' : ':\n' + r.all}`);
    t.match(r.all, `Logged in as ${ts.operator.email}`);
    t.same(run.opened(), [url], 'the CLI handed the same URL to its browser');

    const netrc = readFileSync(join(home, '.netrc'), 'utf8');
    const token = /password (SVC-[A-Za-z0-9_-]{61})/.exec(netrc)?.[1];
    t.ok(token, '~/.netrc holds an API token');
    t.match(netrc, `login ${ts.operator.email}`);
    t.not(token, key, 'a new token, not the API key');

    const whoami = await heroku({ apiUrl: ts.api }, ['auth:whoami'], { home });
    t.equal(whoami.code, 0, `auth:whoami with ~/.netrc exits 0${whoami.code === 0 ? '' : ':\n' + whoami.all}`);
    t.equal(whoami.stdout.trim(), ts.operator.email);
    const list = await heroku({ apiUrl: ts.api }, ['authorizations'], { home });
    t.equal(list.code, 0);
    t.match(list.stdout, DESCRIPTION, 'heroku authorizations lists the login');
    const made = await cliLogins();
    t.equal(made.length, 1, 'exactly one authorization');
    t.match(made[0], { scope: ['global'], access_token: { expires_in: 30 * 86_400 } });
    t.equal((await api(ts, 'GET', '/account', token!)).json.email, ts.operator.email, 'the token works on the API');
  });

  await t.test('denied at the confirmation: the CLI fails with the reason', async (t) => {
    const home = newHome();
    const before = (await cliLogins()).length;
    const run = herokuLogin(ts.api, ts.auth, home);
    await page.goto(await run.url);
    t.match(await page.textContent('h1'), 'Log in the platform CLI?', 'already signed in: straight to the confirmation');
    await page.click('button[value=deny]');
    await page.waitForLoadState();
    t.match(await page.textContent('h1'), 'CLI login denied');
    await look(t, page, 'denied');
    const r = await run.done;
    t.not(r.code, 0, 'heroku login fails');
    t.match(r.all, /The login was denied in the browser/);
    t.match(r.all, /Error ID: access_denied/);
    t.notOk(existsSync(join(home, '.netrc')) && /SVC-/.test(readFileSync(join(home, '.netrc'), 'utf8')), 'no token in ~/.netrc');
    t.equal((await cliLogins()).length, before, 'no authorization made');
  });
});
