/**
 * Serving several public host names on one listener, as the platform lays them out
 * (`registry.<domain>` and `api.<domain>` on port 443): a request whose Host header names another
 * host's public URL goes to that host's handler; every other request stays on the listener's own.
 * Host names compare case-insensitively (RFC 9110 section 4.2.3); the port is part of the name
 * only when the URL has one (a client omits the scheme's default port from Host, RFC 9110 7.2).
 */
import type { Handler } from './exchange.js';

/** A public URL's authority as a client sends it in Host: lowercase `host[:port]`, default port omitted. */
export function authorityOf(url: string): string {
  return new URL(url).host.toLowerCase();
}

/**
 * The listener's handler: `others.get(<Host header>)` when it is there, `own` otherwise.
 * @param others handlers by authority (see authorityOf); an empty map returns `own` itself.
 */
export function byHost(own: Handler, others: Map<string, Handler>): Handler {
  if (others.size === 0) return own;
  return (ex) => (others.get(ex.header('host').toLowerCase()) ?? own)(ex);
}
