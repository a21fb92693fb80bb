/**
 * A real browser for tests: Debian's Chromium driven by playwright-core (which never downloads
 * a browser of its own), with a fresh profile per launch, an axe-core accessibility check and a
 * full-page screenshot of every page a test looks at.
 *
 * Without /usr/bin/chromium the browser tests are skipped with a message, unless CI is set
 * (CI installs chromium, so its absence there is a failure).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Flags that keep Chromium quiet, offline and usable as root in a container. */
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** `skip` option for tap: a message when chromium is missing outside CI, else false. @throws in CI without chromium. */
export function chromiumSkip(): string | false {
  if (existsSync(CHROMIUM)) return false;
  if (process.env.CI) throw new Error(`${CHROMIUM} is missing; CI installs the chromium package (.ci/run)`);
  return `skipped: ${CHROMIUM} not installed (apt-get install chromium)`;
}

/** A browser profile; `close` removes it. */
export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Launches Chromium with a fresh user-data-dir.
 * @param javaScript false to check that pages work without scripts
 */
export async function launchBrowser(javaScript = true): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'slipway-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: ARGS, javaScriptEnabled: javaScript,
    // The pages' CSP allows only their own scripts; axe-core is injected by the test.
    bypassCSP: true, viewport: { width: 1100, height: 800 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Where screenshots go: `.tap/screenshots/<suite>` under the working directory. */
export function screenshotDir(suite: string): string {
  const dir = resolve('.tap', 'screenshots', suite);
  mkdirSync(dir, { recursive: true });
  return dir;
}

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** One axe-core finding. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/** Runs axe-core on the page (WCAG 2 A/AA rules) and returns serious and critical violations. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    // Runs in the page: globalThis is its window.
    const page = globalThis as unknown as { document: unknown; axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }> }> } };
    const r = await page.axe.run(page.document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
