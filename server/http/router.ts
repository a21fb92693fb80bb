/**
 * A small path router for the API and auth hosts: patterns like `/apps/:app/formation/:type`,
 * one value (a handler or a route descriptor) per method. Registry paths (names with slashes)
 * use server/registry/routes.ts.
 */

export type RouteMatch<T> =
  | { kind: 'found'; value: T; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

interface Entry<T> {
  segments: string[];
  values: Map<string, T>;
}

export class Router<T> {
  readonly #entries: Entry<T>[] = [];
  /** Patterns without captures, by their canonical path: one Map look-up for `/account`. */
  readonly #literal = new Map<string, Entry<T>>();

  /** Adds a route; `pattern` segments starting with `:` capture (percent-decoded) values. */
  add(method: string, pattern: string, value: T): this {
    const segments = pattern.split('/').filter(Boolean);
    let entry = this.#entries.find((e) => e.segments.join('/') === segments.join('/'));
    if (!entry) {
      entry = { segments, values: new Map() };
      this.#entries.push(entry);
      if (!segments.some((s) => s.startsWith(':'))) this.#literal.set('/' + segments.join('/'), entry);
    }
    entry.values.set(method, value);
    return this;
  }

  /** Every route as method and pattern (`/apps/:app`), in the order added. */
  routes(): Array<{ method: string; pattern: string }> {
    return this.#entries.flatMap((e) => [...e.values.keys()].map((method) => ({ method, pattern: '/' + e.segments.join('/') })));
  }

  /**
   * Finds the route for `method` and `path`. Literal segments win over captures, so
   * `/account/rate-limits` is never taken for `/account/:x`. HEAD falls back to GET.
   */
  match(method: string, path: string): RouteMatch<T> {
    const found = this.#find(path);
    return found ? this.#pick(found.entry, method, found.params) : { kind: 'not-found' };
  }

  /** The pattern (`/apps/:app`) that `path` falls under, whatever the method; undefined when none. */
  patternOf(path: string): string | undefined {
    const found = this.#find(path);
    return found && '/' + found.entry.segments.join('/');
  }

  #find(path: string): { entry: Entry<T>; params: Record<string, string> } | undefined {
    const literal = this.#literal.get(path);
    if (literal) return { entry: literal, params: {} };
    const parts = path.split('/').filter(Boolean);
    let best: { entry: Entry<T>; params: Record<string, string>; literals: number } | null = null;
    for (const e of this.#entries) {
      if (e.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let ok = true;
      let literals = 0;
      for (let i = 0; i < parts.length && ok; i++) {
        const s = e.segments[i]!;
        if (s.startsWith(':')) {
          try {
            params[s.slice(1)] = decodeURIComponent(parts[i]!);
          } catch {
            ok = false;
          }
        } else {
          ok = s === parts[i];
          literals++;
        }
      }
      if (ok && (!best || literals > best.literals)) best = { entry: e, params, literals };
    }
    return best ?? undefined;
  }

  #pick(entry: Entry<T>, method: string, params: Record<string, string>): RouteMatch<T> {
    const v = entry.values.get(method) ?? (method === 'HEAD' ? entry.values.get('GET') : undefined);
    if (v !== undefined) return { kind: 'found', value: v, params };
    return { kind: 'method-not-allowed', allowed: [...entry.values.keys()] };
  }
}
