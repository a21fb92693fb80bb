/**
 * Request scopes for the read barrier of the PostgreSQL read cache
 * (engine/storage/postgres-invalidation.ts `sync`): the first cached `get` of a request waits
 * for one round trip through this node's listener, after which every commit acknowledged before
 * the request began has been received and evicted; the request's later gets reuse that barrier
 * instead of waiting for one each. Without a scope (background work), every cached get waits
 * for its own barrier.
 *
 * Scopes are carried by AsyncLocalStorage, switched on only by a store that caches (a node on
 * PostgreSQL): on the embedded store `inReadScope` is one boolean test and a direct call.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One request's barrier: set by its first cached get. */
export interface ReadScope {
  /** Resolves true when the cache may answer for this request (see `Invalidation.sync`). */
  fresh?: Promise<boolean>;
}

const scopes = new AsyncLocalStorage<ReadScope>();
let enabled = false;

/** Switches request scopes on for this process (a caching store was opened). */
export function enableReadScopes(): void {
  enabled = true;
}

/** Runs `fn(arg)` (one request's handler) in a scope of its own when scopes are on; else just calls it. */
export function inReadScope<A, T>(fn: (arg: A) => T, arg: A): T {
  return enabled ? scopes.run({}, fn, arg) : fn(arg);
}

/** The scope of the request being handled, or undefined (scopes off, or background work). */
export function currentReadScope(): ReadScope | undefined {
  return enabled ? scopes.getStore() : undefined;
}
