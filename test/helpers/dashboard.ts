/**
 * What the dashboard's browser tests share: signing in through the form, waiting for a form's
 * POST, and looking at a page as people do (axe-core, screenshots at a desktop and a phone width,
 * no horizontal overflow).
 */
import { join } from 'node:path';
import type { Page, Response } from 'playwright-core';
import type { Credentials, TestServer } from './oauth.js';
import { launchBrowser, screenshotDir, seriousViolations, type AxeViolation } from './browser.js';
import { totpCode, TOTP_STEP_SECONDS } from '../../engine/identity/totp.js';

/** The widths the dashboard is checked at (px): a laptop and a phone (iPhone 12-15). */
export const WIDTHS = [1280, 390] as const;

/** Opens the sign-in form (via `path`) and fills e-mail, password and a fresh TOTP code. */
export async function signInPage(page: Page, ts: TestServer, creds: Credentials, path: string): Promise<void> {
  await page.goto(ts.auth + path);
  if (new URL(page.url()).pathname !== '/login') throw new Error(`expected the sign-in page, got ${page.url()}`);
  ts.clock.advance(TOTP_STEP_SECONDS * 1000);
  await page.fill('#email', creds.email);
  await page.fill('#password', creds.password);
  await page.fill('#code', totpCode(creds.totpSecret, ts.clock.now()));
}

/** Runs `act` and returns the response to the POST it makes to `path`. */
export async function submitAndWait(page: Page, path: string, act: () => Promise<void>): Promise<Response> {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
    act(),
  ]);
  await page.waitForLoadState();
  return response;
}

/** What one look at a page found. */
export interface Look {
  /** Per width: the document's scroll width and the viewport's width (px). */
  widths: Array<{ viewport: number; document: number }>;
  /** Serious and critical axe-core violations (at any width). */
  violations: AxeViolation[];
}

/**
 * Looks at the page at each of WIDTHS: a full-page screenshot `<dir>/<name>-<width>.png`, the
 * document's width (it must not exceed the viewport's: no sideways scrolling) and axe-core.
 * Leaves the viewport at the first width.
 */
export async function lookAt(page: Page, dir: string, name: string): Promise<Look> {
  const look: Look = { widths: [], violations: [] };
  for (const width of [...WIDTHS].reverse()) {
    await page.setViewportSize({ width, height: 900 });
    const document = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    look.widths.push({ viewport: width, document });
    await page.screenshot({ path: join(dir, `${name}-${width}.png`), fullPage: true });
    look.violations.push(...await seriousViolations(page));
  }
  return look;
}

/** What a tap test offers the helpers below (the `t` of a subtest). */
interface Asserts {
  ok(v: unknown, message: string): unknown;
  same(found: unknown, wanted: unknown, message: string): unknown;
  comment(...args: unknown[]): unknown;
  teardown(fn: () => unknown): unknown;
}

/**
 * Looks at the page (lookAt) and asserts what a person needs: no sideways scrolling at either
 * width, no serious or critical axe-core violation.
 */
export async function assertLook(t: Asserts, page: Page, dir: string, name: string): Promise<void> {
  const l = await lookAt(page, dir, name);
  for (const w of l.widths) t.ok(w.document <= w.viewport, `${name} at ${w.viewport} px: document ${w.document} px wide, no sideways scrolling`);
  t.same(l.violations, [], `${name}: no serious accessibility violations`);
}

/**
 * A Chromium page for a dashboard suite, closed at `t`'s teardown, which accepts the script's
 * confirmation dialogs; `shots` is `.tap/screenshots/<suite>` (named in a comment).
 */
export async function dashboardPage(t: Asserts, suite: string): Promise<{ page: Page; shots: string }> {
  const shots = screenshotDir(suite);
  t.comment(`screenshots: ${shots}`);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = browser.context.pages()[0] ?? await browser.context.newPage();
  page.on('dialog', (d) => void d.accept());
  return { page, shots };
}

/** Removes the script's confirmation dialogs from the page's forms, as if it had no JavaScript: a destructive action then shows the confirmation page. */
export async function withoutConfirmDialogs(page: Page): Promise<void> {
  await page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): Array<{ removeAttribute(n: string): void }> } }).document;
    for (const f of doc.querySelectorAll('form[data-confirm]')) f.removeAttribute('data-confirm');
  });
}

/** Signs out from the header and signs in again through the form (read-only when asked), landing on `path`. */
export async function signInAgain(page: Page, ts: TestServer, creds: Credentials, path: string, readOnly = false): Promise<void> {
  await page.click('header button:has-text("Sign out")');
  await page.waitForURL(ts.auth + '/logout');
  await signInPage(page, ts, creds, path);
  if (readOnly) await page.check('#read_only');
  await page.click('button[type=submit]');
  await page.waitForURL(ts.auth + path);
}
