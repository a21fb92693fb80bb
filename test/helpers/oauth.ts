/**
 * Test helpers for the OAuth service against an in-process server (test/helpers/harness.ts, on a
 * ManualClock so tests can move time past the 8-hour token lifetime): a tiny browser with a cookie jar, and a form walker
 * that signs in (computing the TOTP code from the account's secret with engine/identity/totp.ts)
 * and answers the consent page the way a person would.
 */
import { request } from 'undici';
import type { ManualClock } from '../../engine/clock.js';
import { totpCode, TOTP_STEP_SECONDS } from '../../engine/identity/totp.js';
import type { InProcessSlipway } from './harness.js';
import { http, type Reply } from './http.js';

/** The vendor media type every API call sends unless a test says otherwise. */
export const V3 = 'application/vnd.slipway+json; version=3';

/** A server started in this process (test/helpers/harness.ts `startInProcess`). */
export type TestServer = InProcessSlipway;

export interface Credentials {
  email: string;
  password: string;
  totpSecret: string;
}

/** Creates another account directly in the engine; returns its credentials and API key. */
export async function createAccount(ts: TestServer, email: string): Promise<Credentials & { apiKey: string; id: string }> {
  const created = await ts.server.accounts.create(email, 'correct horse battery');
  return { email: created.account.email, password: 'correct horse battery', totpSecret: created.totpSecret, apiKey: created.apiKey, id: created.account.id };
}

/** Calls the API with the vendor Accept header and a bearer token. */
export function api(ts: TestServer, method: string, path: string, token: string | null, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return http(method, ts.api + path, {
    headers: { accept: V3, ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Registers an OAuth client as `token`'s account; returns id and secret. */
export async function registerClient(ts: TestServer, token: string, name = 'Test client', redirectUri = 'http://127.0.0.1:9/callback'): Promise<{ id: string; secret: string; redirectUri: string }> {
  const r = await api(ts, 'POST', '/oauth/clients', token, { name, redirect_uri: redirectUri });
  if (r.status !== 201) throw new Error(`client registration: ${r.status} ${r.text}`);
  return { id: r.json.id, secret: r.json.secret, redirectUri };
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const unescape = (s: string) => s.replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m]!);
const attr = (tag: string, name: string) => {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? unescape(m[1]!) : null;
};

/** A form of a page: its action and the values a browser would submit by default. */
export interface PageForm {
  action: string;
  fields: Record<string, string>;
}

/** The `<form method="post">` of `html` whose action is `action` (the first one when omitted). */
export function findForm(html: string, action?: string): PageForm {
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)) {
    const formAction = attr(m[1]!, 'action') ?? '';
    if (action !== undefined && formAction !== action) continue;
    const fields: Record<string, string> = {};
    for (const input of m[2]!.matchAll(/<input\b[^>]*>/g)) {
      const name = attr(input[0], 'name');
      // A browser submits a checkbox or radio only when it is checked.
      if (/\stype="(checkbox|radio)"/.test(input[0]) && !/\schecked\b/.test(input[0])) continue;
      if (name) fields[name] = attr(input[0], 'value') ?? '';
    }
    for (const select of m[2]!.matchAll(/<select\b([^>]*)>([\s\S]*?)<\/select>/g)) {
      const name = attr(select[1]!, 'name');
      const first = /<option\b[^>]*>/.exec(select[2]!);
      if (name && first) fields[name] = attr(first[0], 'value') ?? '';
    }
    return { action: formAction, fields };
  }
  throw new Error(`no form${action ? ` with action ${action}` : ''} in page:\n${html.slice(0, 2000)}`);
}

/** A browser: one origin's cookies, no automatic redirects. */
export class Browser {
  readonly cookies = new Map<string, string>();

  constructor(readonly origin: string) {}

  async request(method: string, pathOrUrl: string, form?: Record<string, string>, headers: Record<string, string> = {}): Promise<Reply> {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : this.origin + pathOrUrl;
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await request(url, {
      method: method as 'GET',
      headers: { ...(cookie ? { cookie } : {}), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...headers },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    const set = res.headers['set-cookie'];
    for (const c of Array.isArray(set) ? set : set ? [set] : []) {
      const [pair = '', ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.body.text();
    const hs: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) hs[k] = Array.isArray(v) ? v.join(', ') : String(v);
    let json: unknown;
    try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
    return { status: res.statusCode, headers: hs, text, json, bytes: Buffer.from(text) };
  }

  get(pathOrUrl: string): Promise<Reply> {
    return this.request('GET', pathOrUrl);
  }

  post(path: string, form: Record<string, string>): Promise<Reply> {
    return this.request('POST', path, form);
  }
}

/** The current TOTP code of an account at the test clock's time. */
export function currentCode(creds: Credentials, clock: ManualClock): string {
  return totpCode(creds.totpSecret, clock.now());
}

/**
 * Signs in through the sign-in form. The clock moves one TOTP step first, since a code is
 * accepted only once (RFC 6238 §5.2).
 * @returns the reply to the form post (303 on success).
 */
export async function signIn(browser: Browser, creds: Credentials, clock: ManualClock, returnTo = '', override: Partial<{ password: string; code: string }> = {}): Promise<Reply> {
  const page = await browser.get('/login' + (returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : ''));
  if (page.status !== 200) throw new Error(`sign-in page: ${page.status}`);
  clock.advance(TOTP_STEP_SECONDS * 1000);
  const form = findForm(page.text, '/login');
  return browser.post(form.action, {
    ...form.fields, email: creds.email, password: override.password ?? creds.password, code: override.code ?? currentCode(creds, clock),
  });
}

/**
 * Walks an authorization URL the way a user would: signs in when asked, then answers the
 * consent page with `decision`. Stops at the first redirect away from the auth host.
 * @returns that redirect's URL (the client's redirect_uri with code or error).
 */
export async function walkAuthorization(browser: Browser, authorizeUrl: string, creds: Credentials, clock: ManualClock, decision: 'allow' | 'deny' = 'allow', consentFields: Record<string, string> = {}): Promise<URL> {
  let r = await browser.get(authorizeUrl);
  for (let hops = 0; hops < 6; hops++) {
    if (r.status === 302 || r.status === 303) {
      const next = new URL(r.headers.location!, browser.origin);
      if (next.origin !== browser.origin) return next;
      if (next.pathname === '/login') {
        r = await signIn(browser, creds, clock, next.searchParams.get('return_to') ?? '');
        if (r.status !== 303) throw new Error(`sign-in failed: ${r.status} ${r.text.slice(0, 500)}`);
        continue;
      }
      r = await browser.get(next.pathname + next.search);
      continue;
    }
    if (r.status === 200 && r.text.includes('action="/oauth/authorize"')) {
      const form = findForm(r.text, '/oauth/authorize');
      r = await browser.post(form.action, { ...form.fields, ...consentFields, decision });
      continue;
    }
    throw new Error(`unexpected page ${r.status}: ${r.text.slice(0, 800)}`);
  }
  throw new Error('too many redirects');
}
