/**
 * API version negotiation through `Accept` (docs/rules.md Versioning 1-2; docs/platform-conventions.md 1.1).
 *
 * - `application/vnd.<vendor>+json; version=3` selects version 3; `version=3.<variant>` (for
 *   example `3.container-releases`, `3.docker-releases`, `3.sdk`) selects a variant of it; no
 *   version parameter = 3. `<vendor>` is the configured vendor (SLIPWAY_VENDOR) or one of the
 *   compatible vendor names (SLIPWAY_ACCEPT_VENDORS, default `heroku`: what the platform's own
 *   CLI hard-codes), so existing clients work unchanged.
 * - A vendor media type naming another version (`version=2`), or only media types we cannot
 *   produce (`text/html`, another vendor's type), is refused: 406 `not_acceptable`, naming the
 *   header to send (docs/platform-conventions.md 1.4).
 * - A missing `Accept`, or one admitting plain JSON (`application/json`, `application/*`,
 *   `*\/*`), is served version 3, the only version: our decision (the reference leaves it
 *   open), so curl and generic OAuth libraries work without a vendor header.
 */
import { fail } from '../../engine/errors.js';

/** The negotiated version: always 3, with the variant when one was named. */
export interface Negotiated {
  variant: string | null;
  /** The vendor media type the client asked for (`application/vnd.<vendor>+json`), or null for plain JSON. */
  mediaType: string | null;
}

const GENERIC = new Set(['*/*', 'application/*', 'application/json']);
const VERSION = /^3(?:\.([A-Za-z0-9][A-Za-z0-9._-]{0,63}))?$/;
const PLAIN: Negotiated = { variant: null, mediaType: null };
const cache = new Map<string, Negotiated | string>();

function parse(header: string, vendor: string, compatible: readonly string[]): Negotiated | string {
  const vendorTypes = new Set([vendor, ...compatible].map((v) => `application/vnd.${v}+json`));
  let generic = false;
  let wrongVersion: string | null = null;
  for (const range of header.split(',')) {
    const [type = '', ...rawParams] = range.split(';');
    const media = type.trim().toLowerCase();
    const params = new Map<string, string>();
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq > 0) params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1'));
    }
    if (params.has('q') && Number(params.get('q')) === 0) continue;
    if (vendorTypes.has(media)) {
      const version = params.get('version');
      if (version === undefined) return { variant: null, mediaType: media };
      const m = VERSION.exec(version);
      if (m) return { variant: m[1] ?? null, mediaType: media };
      wrongVersion = version;
    } else if (GENERIC.has(media)) {
      generic = true;
    }
  }
  const want = `Accept: application/vnd.${vendor}+json; version=3`;
  if (wrongVersion !== null) return `API version "${wrongVersion.slice(0, 40)}" is not available; this API serves version 3. Please use ${want}.`;
  if (generic) return PLAIN;
  return `Cannot serve the media type in Accept: "${header.slice(0, 100)}". Please use ${want}.`;
}

/**
 * Checks the request's Accept header.
 * @param header the header value ('' when absent)
 * @param vendor the configured vendor (`slipway` by default)
 * @param compatible further vendor names accepted as the same API (SLIPWAY_ACCEPT_VENDORS)
 * @throws NOT_ACCEPTABLE (406) with a message naming the header to send.
 */
export function negotiate(header: string, vendor: string, compatible: readonly string[] = []): Negotiated {
  if (header === '') return PLAIN;
  const k = vendor + '\n' + compatible.join(',') + '\n' + header;
  let r = cache.get(k);
  if (r === undefined) {
    r = parse(header, vendor, compatible);
    if (cache.size >= 256) cache.clear();
    cache.set(k, r);
  }
  if (typeof r === 'string') throw fail('NOT_ACCEPTABLE', r);
  return r;
}
