/**
 * Server-rendered pages of the auth host with Eta (auto-escaping `<%= %>`, layouts), from
 * `server/auth-host/views/*.eta`. Templates are compiled once and cached. Every page goes out with
 * headers that keep it out of caches, frames and referrers: the consent page must not be
 * framed (clickjacking), and codes travel in URLs (RFC 6749 §10.12, RFC 9700 §4.2).
 */
import { Eta } from 'eta';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { Exchange } from '../http/exchange.js';

/** The templates' directory in the source tree (this file runs from dist/server/auth). */
export const VIEWS_DIR = fileURLToPath(new URL('../../../server/auth-host/views/', import.meta.url));

const TEMPLATES = ['layout', 'sign-in', 'consent', 'message', 'home', 'applications', 'clients', 'client', 'teams', 'team', 'apps', 'app', 'config-vars', 'app-settings', 'confirm', 'secret', 'cli-login',
  'registry', 'image', 'registry-delete', 'releases', 'webhooks', 'webhook'] as const;
export type Template = Exclude<(typeof TEMPLATES)[number], 'layout'>;

export class Views {
  readonly #eta: Eta;
  /** The stylesheet served at /assets/site.css (small additions to the base). */
  readonly css: string;
  /** The base stylesheet (Pico CSS, npm @picocss/pico; docs/user-guide.md says why) served at /assets/base.css. */
  readonly baseCss: string;
  /** The progressive-enhancement script served at /assets/dashboard.js (copy, confirm). */
  readonly script: string;

  /** Loads and compiles every template. @throws Error naming the directory when one is missing. */
  constructor(dir = VIEWS_DIR) {
    for (const t of TEMPLATES) {
      if (!existsSync(join(dir, `${t}.eta`))) throw new Error(`auth host template ${t}.eta is missing from ${dir}`);
    }
    this.#eta = new Eta({ views: dir, cache: true, autoEscape: true });
    this.css = readFileSync(join(dir, 'site.css'), 'utf8');
    this.script = readFileSync(join(dir, 'dashboard.js'), 'utf8');
    this.baseCss = readFileSync(createRequire(import.meta.url).resolve('@picocss/pico/css/pico.min.css'), 'utf8');
  }

  /** Renders a page. */
  render(template: Template, data: Record<string, unknown>): string {
    return this.#eta.render(`./${template}`, data);
  }
}

/**
 * Sends an HTML page.
 * @param formAction extra origins forms may post or redirect to (the consent page's client)
 */
export function sendPage(ex: Exchange, status: number, html: string, headers: Record<string, string> = {}, formAction = ''): void {
  ex.send(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': `default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; connect-src 'none'; form-action 'self'${formAction ? ' ' + formAction : ''}; frame-ancestors 'none'; base-uri 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'request-id': ex.id,
    ...headers,
  }, html, Buffer.byteLength(html));
}

/** A 302/303 redirect with the same caching and referrer rules as pages. */
export function sendRedirect(ex: Exchange, status: 302 | 303, location: string, headers: Record<string, string> = {}): void {
  ex.send(status, { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'request-id': ex.id, ...headers });
}
