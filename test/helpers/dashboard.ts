/**
 * Steps the dashboard's browser tests share: signing in with the second factor, waiting for a
 * form's POST, and checking that a page fits the viewport's width (no horizontal scrolling).
 */
import type { Page, Response } from 'playwright-core';
import type { Credentials, TestServer } from './oauth.js';
import { totpCode, TOTP_STEP_SECONDS } from '../../engine/identity/totp.js';

/** Opens the sign-in form (via `path`) and fills e-mail, password and a fresh TOTP code; the caller submits. */
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

/** The document's width and the viewport's (CSS pixels): a page that reflows has document ≤ viewport. */
export async function widths(page: Page): Promise<{ document: number; viewport: number }> {
  return page.evaluate(() => {
    const w = globalThis as unknown as { innerWidth: number; document: { documentElement: { scrollWidth: number } } };
    return { document: w.document.documentElement.scrollWidth, viewport: w.innerWidth };
  });
}
