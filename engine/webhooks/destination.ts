/**
 * Where deliveries may go (docs/webhooks.md "Security"): HTTPS URLs to public addresses. The
 * operator's allowance (SLIPWAY_WEBHOOK_ALLOWED_HOSTS: host names, `host:port` pairs and CIDRs)
 * admits listed destinations over http or https, loopback and private ones included. Addresses
 * are checked after DNS resolution, on the address the connection is then made to (sender.ts).
 */
import { BlockList, isIP } from 'node:net';

/**
 * Ranges never delivered to without the operator's allowance: "this network", private
 * (RFC 1918, RFC 4193), shared (RFC 6598), loopback, link-local (cloud metadata at
 * 169.254.169.254 and fd00:ec2::254 included), benchmarking, multicast, reserved, broadcast,
 * IPv4-mapped and NAT64 forms of the same (checked on the embedded IPv4 address).
 */
const FORBIDDEN_V4 = ['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24', '192.0.2.0/24',
  '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4'];
const FORBIDDEN_V6 = ['::/128', '::1/128', 'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8', '2001:db8::/32', '100::/64'];

const forbidden = new BlockList();
for (const c of FORBIDDEN_V4) forbidden.addSubnet(c.split('/')[0]!, Number(c.split('/')[1]), 'ipv4');
for (const c of FORBIDDEN_V6) forbidden.addSubnet(c.split('/')[0]!, Number(c.split('/')[1]), 'ipv6');

/** The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible or NAT64 (`64:ff9b::/96`) IPv6 address, else null. */
function embeddedV4(ip: string): string | null {
  const m = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m) return m[1]!;
  const h = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!h) return null;
  const a = parseInt(h[1]!, 16), b = parseInt(h[2]!, 16);
  return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
}

/** True when `ip` (a literal address) is in a forbidden range (see FORBIDDEN_V4/V6). */
export function isForbiddenAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return forbidden.check(ip, 'ipv4');
  if (family !== 6) return true;
  const v4 = embeddedV4(ip);
  return v4 !== null ? forbidden.check(v4, 'ipv4') : forbidden.check(ip, 'ipv6');
}

/** The operator's allowance, parsed (`parseAllowedHosts`). */
export interface AllowedHosts {
  /** Lowercase host names (or literal addresses) allowed on any port. */
  hosts: Set<string>;
  /** `host:port` pairs allowed (lowercase host, IPv6 without brackets). */
  hostPorts: Set<string>;
  /** CIDR ranges the resolved address may fall in. */
  cidrs: BlockList;
  /** True when nothing is allowed beyond the defaults. */
  empty: boolean;
  /** The text it was parsed from: parsing it again gives the same allowance (how it crosses to the sender thread). */
  text: string;
}

/**
 * Parses SLIPWAY_WEBHOOK_ALLOWED_HOSTS: comma-separated `host`, `host:port`, `[v6]:port` or
 * `address/prefix` items; blanks ignored.
 * @throws Error naming the malformed item.
 */
export function parseAllowedHosts(text: string): AllowedHosts {
  const out: AllowedHosts = { hosts: new Set(), hostPorts: new Set(), cidrs: new BlockList(), empty: true, text };
  for (const raw of text.split(',')) {
    const item = raw.trim().toLowerCase();
    if (item === '') continue;
    out.empty = false;
    const cidr = /^([0-9a-f.:]+)\/(\d{1,3})$/.exec(item);
    if (cidr) {
      const family = isIP(cidr[1]!);
      const bits = Number(cidr[2]);
      if (family === 0 || bits > (family === 4 ? 32 : 128)) throw new Error(`SLIPWAY_WEBHOOK_ALLOWED_HOSTS: "${item}" is not a CIDR range`);
      out.cidrs.addSubnet(cidr[1]!, bits, family === 4 ? 'ipv4' : 'ipv6');
      continue;
    }
    const hp = /^\[([0-9a-f:.]+)\]:(\d{1,5})$/.exec(item) ?? /^([a-z0-9.-]+):(\d{1,5})$/.exec(item);
    if (hp) out.hostPorts.add(`${hp[1]}:${Number(hp[2])}`);
    else if (isIP(item.replace(/^\[|\]$/g, '')) !== 0 || /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(item)) out.hosts.add(item.replace(/^\[|\]$/g, ''));
    else throw new Error(`SLIPWAY_WEBHOOK_ALLOWED_HOSTS: "${item}" is neither a host, host:port nor a CIDR range`);
  }
  return out;
}

/** No allowance: the default. */
export const NOTHING_ALLOWED: AllowedHosts = parseAllowedHosts('');

/** The URL's host (lowercase, IPv6 without brackets) and port (default by scheme). */
export function hostAndPort(url: URL): { host: string; port: number } {
  return { host: url.hostname.toLowerCase().replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80 };
}

/** True when the operator listed the URL's host (or host:port) by name. */
export function hostListed(url: URL, allowed: AllowedHosts): boolean {
  const { host, port } = hostAndPort(url);
  return allowed.hosts.has(host) || allowed.hostPorts.has(`${host}:${port}`);
}

/** True when the resolved `ip` may be connected to for `url`. */
export function addressAllowed(url: URL, ip: string, allowed: AllowedHosts): boolean {
  if (hostListed(url, allowed)) return true;
  const family = isIP(ip);
  if (family !== 0 && allowed.cidrs.check(ip, family === 4 ? 'ipv4' : 'ipv6')) return true;
  return !isForbiddenAddress(ip);
}

/** Longest webhook URL accepted (characters). */
export const MAX_URL_LENGTH = 2048;

/**
 * Why `text` cannot be a delivery URL, or null when it can: an absolute http(s) URL without
 * credentials or fragment, https unless the operator's allowance lists its host (by name,
 * host:port, or a CIDR holding its literal address); a literal address must not be forbidden
 * (unless allowed). Host names are checked again after resolution at every attempt.
 */
export function urlProblem(text: string, allowed: AllowedHosts): string | null {
  if (text.length > MAX_URL_LENGTH) return `url must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'url is not a valid absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'url must be an https URL';
  if (url.username !== '' || url.password !== '') return 'url must not contain credentials (use the authorization option)';
  if (url.hash !== '') return 'url must not contain a fragment';
  const { host } = hostAndPort(url);
  const literal = isIP(host) !== 0;
  const listed = hostListed(url, allowed) || (literal && allowed.cidrs.check(host, isIP(host) === 4 ? 'ipv4' : 'ipv6'));
  if (url.protocol === 'http:' && !listed) return 'url must be an https URL (http only to hosts the operator allows)';
  if (literal && !listed && isForbiddenAddress(host)) return 'url points to a loopback, private, link-local or reserved address';
  if (!literal && (host === 'localhost' || host.endsWith('.localhost')) && !listed) return 'url points to a loopback address';
  return null;
}
