/**
 * Values that are usually ready at once and sometimes only later. The registry's hot reads
 * (manifest GET, blob HEAD, admission) run over the metadata contract, whose embedded store
 * answers synchronously (`MetadataReader.getNow`, engine/storage/metadata.ts) and whose networked
 * stores answer with a Promise. Writing such a path once over `MaybePromise` lets a request whose
 * data is local complete without creating or awaiting any promise (each `await` of an already
 * known value still costs a microtask hop and an allocation: measured ~12 µs of CPU per manifest
 * GET across a dozen hops, bench/README.md), while the same code serves the networked store.
 *
 * Rules for code written this way: a value is a Promise exactly when it came from the networked
 * path (`isPromise` tells); errors are thrown synchronously on the synchronous path and rejected
 * on the asynchronous one, so callers handle both (`tryMaybe`), or are `async` functions, for
 * which `await` of either form behaves the same.
 */

/** A value, or a Promise of it. */
export type MaybePromise<T> = T | Promise<T>;

/** True when `v` is a (native) Promise, i.e. the value is not known yet. */
export function isPromise<T>(v: MaybePromise<T>): v is Promise<T> {
  return v instanceof Promise;
}

/**
 * Applies `f` to the value of `m`: at once when `m` is a value (so `f`'s throw propagates
 * synchronously and its result is returned as is), else once `m` resolves (a Promise).
 */
export function andThen<T, R>(m: MaybePromise<T>, f: (v: T) => MaybePromise<R>): MaybePromise<R> {
  return m instanceof Promise ? m.then(f) : f(m);
}

/**
 * Runs `f`, handing an error it throws, or the rejection of the Promise it returns, to
 * `onError`, whose result (or throw) takes its place. Synchronous when `f` and `onError` are.
 */
export function tryMaybe<T>(f: () => MaybePromise<T>, onError: (e: unknown) => MaybePromise<T>): MaybePromise<T> {
  let r: MaybePromise<T>;
  try {
    r = f();
  } catch (e) {
    return onError(e);
  }
  return r instanceof Promise ? r.catch(onError) : r;
}
