/**
 * A TCP proxy on loopback in front of a real server, for fault injection: in `pass` mode it
 * relays bytes both ways; switched to `swallow`, it behaves like a peer that accepts connections
 * and never answers (a stopped process, a black-holed route, an overloaded store): every
 * connection open at the switch, and every one accepted while it lasts, has what the client
 * sends read and dropped, and nothing of the server's answers reaches the client. Back in `pass`
 * mode new connections are relayed again; swallowed ones stay swallowed until their client
 * closes them (their half-relayed requests could not be resumed anyway).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** What the proxy does with traffic now. */
export type ProxyMode = 'pass' | 'swallow';

/** A running proxy. */
export interface TcpProxy {
  /** `http://127.0.0.1:<port>` of the proxy. */
  endpoint: string;
  port: number;
  mode: ProxyMode;
  /** Switches the mode (see the file header). */
  setMode(mode: ProxyMode): void;
  /**
   * Connections accepted, swallowed, open now, and `requestsDropped`: swallowed connections that
   * carried bytes after the switch (a request sent into the silence) and that their client has
   * closed since (it gave up waiting).
   */
  stats(): { accepted: number; swallowed: number; open: number; requestsDropped: number };
  /**
   * The first line of each dropped request counted in `requestsDropped`, in the order their
   * clients gave up (e.g. `POST /bucket/key?uploads HTTP/1.1`): tells a test's own requests from
   * whatever else the client sent into the silence meanwhile.
   */
  droppedRequests(): string[];
  close(): Promise<void>;
}

interface Pair { client: Socket; upstream: Socket; swallowed: boolean; dropped: number; /** The first line of what was dropped (a request line when a request began after the switch). */ firstLine?: string }

/**
 * Starts a proxy to `target` (`host:port`) on a free loopback port.
 * @param target the real server, e.g. `127.0.0.1:7480`
 */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const [host, portText] = target.replace(/^https?:\/\//, '').split(':');
  const targetPort = Number(portText);
  const pairs = new Set<Pair>();
  let mode: ProxyMode = 'pass';
  let accepted = 0;
  let swallowed = 0;
  /** First lines of the dropped requests: their count is `requestsDropped`. */
  const droppedLines: string[] = [];
  const swallow = (p: Pair) => {
    if (p.swallowed) return;
    p.swallowed = true;
    swallowed++;
    p.upstream.destroy(); // the store's answers never come; the client's bytes go nowhere
    p.client.removeAllListeners('data');
    p.client.on('data', (b: Buffer) => {
      if (p.dropped === 0) p.firstLine = b.subarray(0, Math.min(b.length, 512)).toString('latin1').split('\r\n', 1)[0];
      p.dropped += b.length;
    });
  };
  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect(targetPort, host);
    const pair: Pair = { client, upstream, swallowed: false, dropped: 0 };
    pairs.add(pair);
    const end = () => {
      if (pairs.delete(pair) && pair.dropped > 0) droppedLines.push(pair.firstLine ?? '');
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    client.on('close', end);
    upstream.on('error', () => { if (!pair.swallowed) end(); });
    upstream.on('close', () => { if (!pair.swallowed) end(); });
    client.on('data', (b) => { if (!pair.swallowed && !upstream.write(b)) client.pause(); });
    upstream.on('drain', () => client.resume());
    upstream.on('data', (b) => { if (!pair.swallowed && !client.write(b)) upstream.pause(); });
    client.on('drain', () => upstream.resume());
    if (mode === 'swallow') swallow(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    get mode() { return mode; },
    setMode(m) {
      mode = m;
      if (m === 'swallow') for (const p of pairs) swallow(p);
    },
    stats: () => ({ accepted, swallowed, open: pairs.size, requestsDropped: droppedLines.length }),
    droppedRequests: () => [...droppedLines],
    close: async () => {
      for (const p of pairs) { p.client.destroy(); p.upstream.destroy(); }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
