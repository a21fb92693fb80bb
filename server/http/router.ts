/**
 * A small path router for the API and auth hosts: patterns like `/apps/:app/formation/:type`,
 * one handler per method. Registry paths (names with slashes) use server/registry/routes.ts.
 */
import type { Exchange } from './exchange.js';

export type RouteHandler<C> = (ctx: C, ex: Exchange, params: Record<string, string>) => Promise<void>;

interface Entry<C> {
  segments: string[];
  handlers: Map<string, RouteHandler<C>>;
}

export type RouteMatch<C> =
  | { kind: 'found'; handler: RouteHandler<C>; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

export class Router<C> {
  readonly #entries: Entry<C>[] = [];

  /** Adds a route; `pattern` segments starting with `:` capture (percent-decoded) values. */
  add(method: string, pattern: string, handler: RouteHandler<C>): this {
    const segments = pattern.split('/').filter(Boolean);
    let entry = this.#entries.find((e) => e.segments.join('/') === segments.join('/'));
    if (!entry) {
      entry = { segments, handlers: new Map() };
      this.#entries.push(entry);
    }
    entry.handlers.set(method, handler);
    return this;
  }

  match(method: string, path: string): RouteMatch<C> {
    const parts = path.split('/').filter(Boolean);
    for (const e of this.#entries) {
      if (e.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const s = e.segments[i]!;
        if (s.startsWith(':')) {
          try {
            params[s.slice(1)] = decodeURIComponent(parts[i]!);
          } catch {
            ok = false;
          }
        } else ok = s === parts[i];
      }
      if (!ok) continue;
      const h = e.handlers.get(method) ?? (method === 'HEAD' ? e.handlers.get('GET') : undefined);
      if (h) return { kind: 'found', handler: h, params };
      return { kind: 'method-not-allowed', allowed: [...e.handlers.keys()] };
    }
    return { kind: 'not-found' };
  }
}
