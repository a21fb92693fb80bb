/**
 * Request targets and authorities of the own HTTP/1.1 listener (RFC 9112 §3.2, §3.3): the
 * origin-form (`/path?query`) and the absolute-form (`http://host:port/path?query`), which a
 * server MUST accept (§3.2.2) and which some clients send when they follow an absolute
 * `Location` (the Node registry libraries do for upload sessions). The authority-form (CONNECT)
 * and the asterisk-form (`OPTIONS *`) are not served: no route has them.
 */

/**
 * `uri-host [ ":" port ]` (RFC 3986 §3.2.2, §3.2.3; RFC 9110 §7.2): an IP-literal in brackets,
 * or a reg-name / IPv4 address of unreserved, sub-delims and percent signs; the port is digits.
 * An empty value is valid (RFC 9112 §3.2: a Host field may be empty when the target URI has no
 * authority).
 */
const AUTHORITY = /^(?:\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[\w.~!$&'()*+,;=:-]+)\]|[\w.~!$&'()*+,;=%-]*)(?::\d*)?$/;

/** `scheme "://" authority rest`: the authority ends at the first "/", "?" or "#" (RFC 3986 §3.2). */
const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;

/** Whether `value` is a valid Host field value or absolute-form authority (no userinfo). */
export function validAuthority(value: string): boolean {
  return AUTHORITY.test(value);
}

/** A request target reduced to what the exchange serves. */
export interface Target {
  /** Path and query, as sent (origin-form), starting with "/". */
  path: string;
  /** The authority of an absolute-form target; undefined for origin-form. */
  authority?: string;
}

/**
 * Reads a request target of printable ASCII (the request line's pattern checked that).
 * Origin-form is returned as it is. Absolute-form (RFC 9112 §3.2.2) must use the `http` or
 * `https` scheme (any case, RFC 3986 §3.1), carry a non-empty host (RFC 9112 §3.3: the target
 * URI of an `http(s)` scheme needs one) and no userinfo (RFC 9110 §4.2.4: a recipient treats it
 * as an error); its path is "/" when empty.
 * @returns the target, or null when it is neither form (the listener answers 400)
 */
export function parseTarget(raw: string): Target | null {
  if (raw.includes('#')) return null; // no fragment in a request target (RFC 9112 §3.2)
  if (raw.charCodeAt(0) === 0x2f) return { path: raw };
  const m = ABSOLUTE_FORM.exec(raw);
  if (!m) return null;
  const scheme = m[1]!.toLowerCase();
  const authority = m[2]!;
  if (scheme !== 'http' && scheme !== 'https') return null;
  if (authority === '' || authority.startsWith(':') || !AUTHORITY.test(authority)) return null;
  const rest = m[3]!;
  return { path: rest.charCodeAt(0) === 0x2f ? rest : `/${rest}`, authority };
}
