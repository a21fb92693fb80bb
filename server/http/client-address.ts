/**
 * The source address of a request, for per-source limits (docs/faults.md "CLI logins"): the
 * socket peer, unless the peer is a trusted proxy (SLIPWAY_TRUSTED_PROXIES), in which case the
 * `X-Forwarded-For` list is walked from the right (the hop the trusted proxy appended) past every
 * trusted proxy; the first address not trusted is the source (the algorithm of MDN's
 * X-Forwarded-For "Selecting an IP address", rightmost-untrusted). Entries a client wrote itself
 * sit left of that and are never believed. The PROXY protocol is not read.
 */
import { BlockList, isIP } from 'node:net';

/**
 * Parses SLIPWAY_TRUSTED_PROXIES: comma-separated IP addresses or CIDR ranges
 * (`10.0.0.0/8`, `fd00::/8`), or `none`.
 * @throws Error naming `from` and the bad entry.
 */
export function parseTrustedProxies(raw: string, from: string): string[] {
  if (raw.trim() === 'none') return [];
  const entries = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
  for (const e of entries) {
    const [addr = '', prefix] = e.split('/');
    const v = isIP(addr);
    const max = v === 4 ? 32 : 128;
    if (v === 0 || (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max))) {
      throw new Error(`${from}: "${e}" is not an IP address or CIDR range (e.g. 10.0.0.0/8, fd00::/8), or use none`);
    }
  }
  return entries;
}

/** The 8 hextets of an IPv6 address (a trailing dotted IPv4 part allowed), or undefined. */
function hextets(a: string): number[] | undefined {
  let text = a;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const o = dotted[1]!.split('.').map(Number);
    text = text.slice(0, -dotted[1]!.length) + `${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)));
  const left = part(head), right = tail === undefined ? [] : part(tail);
  const fill = 8 - left.length - right.length;
  if (fill < 0 || (tail === undefined && fill !== 0)) return undefined;
  return [...left, ...new Array<number>(fill).fill(0), ...right];
}

/**
 * An address in one canonical text form: IPv4 dotted (also when given IPv4-mapped IPv6, in
 * either the short `::ffff:1.2.3.4` or uWebSockets' long hex form), IPv6 lowercase and
 * compressed; zone ids and brackets dropped. '' for anything that is not an IP address.
 */
export function canonicalAddress(raw: string): string {
  const a = raw.trim().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v = isIP(a);
  if (v === 4) return a;
  if (v !== 6) return '';
  const h = hextets(a);
  if (!h) return '';
  if (h.slice(0, 5).every((x) => x === 0) && h[5] === 0xffff) return `${h[6]! >> 8}.${h[6]! & 255}.${h[7]! >> 8}.${h[7]! & 255}`;
  const text = h.map((x) => x.toString(16)).join(':');
  // Compress the longest run of zero hextets (RFC 5952 §4.2).
  const runs = [...text.matchAll(/(?:^|:)0(?::0)+(?::|$)/g)].sort((x, y) => y[0].length - x[0].length);
  return runs[0] ? text.slice(0, runs[0].index) + '::' + text.slice(runs[0].index! + runs[0][0].length) : text;
}

/**
 * The key under which a source's requests are counted: an IPv4 address, or the /64 prefix of
 * an IPv6 address (one subscriber's network: a host can pick any address in it).
 */
export function sourceKey(address: string): string {
  const a = canonicalAddress(address);
  if (isIP(a) !== 6) return a;
  return hextets(a)!.slice(0, 4).map((x) => x.toString(16)).join(':') + '::/64';
}

/** Finds the source address of requests given the trusted proxies. */
export class SourceAddresses {
  readonly #trusted = new BlockList();
  readonly #any: boolean;

  /** @param trusted entries of SLIPWAY_TRUSTED_PROXIES (parseTrustedProxies) */
  constructor(trusted: readonly string[]) {
    this.#any = trusted.length > 0;
    for (const e of trusted) {
      const [addr = '', prefix] = e.split('/');
      const type = isIP(addr) === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) this.#trusted.addAddress(addr, type);
      else this.#trusted.addSubnet(addr, Number(prefix), type);
    }
  }

  #isTrusted(a: string): boolean {
    const v = isIP(a);
    return v !== 0 && this.#trusted.check(a, v === 4 ? 'ipv4' : 'ipv6');
  }

  /**
   * The canonical source address of a request from socket peer `peer` carrying the
   * `X-Forwarded-For` header value `forwardedFor` ('' when absent).
   */
  of(peer: string, forwardedFor: string): string {
    let source = canonicalAddress(peer);
    if (!this.#any || !this.#isTrusted(source) || forwardedFor === '') return source;
    const hops = forwardedFor.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = canonicalAddress(hops[i]!);
      if (hop === '') return source; // not an address: the last hop a trusted proxy vouched for
      source = hop;
      if (!this.#isTrusted(hop)) return hop;
    }
    return source;
  }
}
