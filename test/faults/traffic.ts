/**
 * Client traffic for the fault-injection tests (test/faults/): timed raw HTTP requests with a
 * hang detector, a seeded random source, and the outcome log the invariants are checked on.
 */
import { request } from 'undici';
import { randomInt } from 'node:crypto';

/** A seeded random source (mulberry32): `next()` in [0, 1). */
export interface Rng {
  seed: number;
  next(): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
}

/** The seed from SLIPWAY_TEST_SEED, else a random one (print it: a failure replays with it). */
export function testSeed(): number {
  const env = process.env.SLIPWAY_TEST_SEED;
  return env !== undefined && env !== '' ? Number(env) : randomInt(2 ** 31);
}

/** mulberry32 over `seed`. */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}

/** One answered (or unanswered) request. */
export interface Outcome {
  what: string;
  /** 0 when no answer came (connection error, or the hang detector fired). */
  status: number;
  /** The distribution error code of an error answer. */
  code?: string;
  message?: string;
  retryAfter?: string;
  /** When it was sent (performance.now()). */
  at: number;
  /** Milliseconds from sending to the last byte of the answer (or the failure). */
  ms: number;
  /** The client-side error when no complete answer came (`TimeoutError`: the request hung). */
  error?: string;
  /** The fault phase when the request was sent. */
  phase: string;
  headers: Record<string, string>;
  bytes: Buffer;
}

/**
 * Sends one request and waits for the whole answer, at most `hangMs` (then it is recorded as
 * hung: `error` TimeoutError). Never throws.
 */
export async function timed(what: string, phase: string, method: string, url: string, opts: { headers?: Record<string, string>; body?: Buffer; hangMs: number }): Promise<Outcome> {
  const t0 = performance.now();
  const base = { what, phase, at: t0, headers: {}, bytes: Buffer.alloc(0) };
  try {
    const res = await request(url, { method: method as 'GET', headers: opts.headers, body: opts.body, signal: AbortSignal.timeout(opts.hangMs) });
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
    let bytes: Buffer;
    try {
      bytes = Buffer.from(await res.body.arrayBuffer());
    } catch (e) {
      return { ...base, status: res.statusCode, headers, ms: performance.now() - t0, error: (e as Error).name };
    }
    let code: string | undefined;
    let message: string | undefined;
    if (res.statusCode >= 400) {
      try {
        const err = JSON.parse(bytes.toString()).errors?.[0];
        code = err?.code;
        message = err?.message;
      } catch { /* not a distribution error body */ }
    }
    return { ...base, status: res.statusCode, headers, bytes, code, message, retryAfter: headers['retry-after'], ms: performance.now() - t0 };
  } catch (e) {
    return { ...base, status: 0, ms: performance.now() - t0, error: `${(e as Error).name}: ${(e as Error).message}` };
  }
}

/** A short line for a report. */
export function describe(o: Outcome): string {
  return `${o.phase} ${o.what}: ${o.status}${o.code ? ` ${o.code}` : ''}${o.error ? ` (${o.error})` : ''} in ${Math.round(o.ms)} ms${o.message ? ` "${o.message.slice(0, 120)}"` : ''}`;
}
