/**
 * A preload (`node --import <this file>`) for running an unmodified client against servers on
 * loopback: connections to ONE host name, SLIPWAY_REDIRECT_HOST, go to SLIPWAY_REDIRECT_TO
 * (`address:port`) instead. Nothing else is touched: no header, no request, no other host.
 *
 * Why: the platform's CLI reaches the registry at `registry.<HEROKU_HOST>` with the API's scheme
 * and port (see docs/user-guide.md "Using the platform CLI"); in a real deployment DNS maps that name; in
 * tests, with every server on a free port, this preload plays the part of DNS (and of the port).
 */
import net from 'node:net';

const name = process.env.SLIPWAY_REDIRECT_HOST;
const to = process.env.SLIPWAY_REDIRECT_TO;
if (name && to) {
  const colon = to.lastIndexOf(':');
  const host = to.slice(0, colon);
  const port = Number(to.slice(colon + 1));
  const connect = net.Socket.prototype.connect;
  // net.createConnection passes its normalized [options, callback] array; direct calls pass options.
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    const first = args[0];
    const options = (Array.isArray(first) ? first[0] : first) as { host?: string; port?: number } | undefined;
    if (options && typeof options === 'object' && options.host === name) {
      options.host = host;
      options.port = port;
    }
    return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;
}
