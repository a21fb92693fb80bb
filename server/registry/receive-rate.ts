/**
 * Minimum receive rate of upload bodies: a body that delivers fewer than `minBytesPerSecond` over
 * a window of `windowMs` is cut off with TOO_SLOW (408), so a client cannot hold a session, a
 * connection and buffer memory open by trickling bytes. The check runs as bytes arrive (a body
 * that stops entirely is ended by the transport's idle timeout instead). Time the server itself
 * asked the client to pause (backpressure) starts a new window, so the server's own slowness
 * never counts against the client.
 *
 * What is kept when a body is cut off: every byte accepted before the chunk that closed the too
 * slow window (Uploads.finishAppend with "received"); the session stays open at that offset.
 */
import type { BodySink } from '../http/exchange.js';
import { fail } from '../../engine/errors.js';

/** The minimum rate; 0 bytes per second turns the check off. */
export interface ReceiveRate {
  /** Bytes per second (SLIPWAY_UPLOAD_MIN_RATE is in KiB/s). */
  minBytesPerSecond: number;
  /** Window over which the rate is measured (ms; SLIPWAY_UPLOAD_RATE_WINDOW is in seconds). */
  windowMs: number;
}

/** Defaults: 1 KiB/s over 30 s. */
export const DEFAULT_RECEIVE_RATE: ReceiveRate = { minBytesPerSecond: 1024, windowMs: 30_000 };

/**
 * Wraps `sink` with the rate check.
 * @throws TOO_SLOW from write/commit when a window closes below the minimum (the chunk is not passed on).
 */
export function withReceiveRate(sink: BodySink, rate: ReceiveRate, now: () => number = Date.now): BodySink {
  if (rate.minBytesPerSecond <= 0) return sink;
  let windowStart = now();
  let received = 0;
  const check = (n: number) => {
    received += n;
    const t = now();
    const elapsed = t - windowStart;
    if (elapsed < rate.windowMs) return;
    if (received < (rate.minBytesPerSecond * elapsed) / 1000) {
      throw fail('TOO_SLOW', `the upload body arrived at ${Math.floor((received * 1000) / elapsed)} bytes/s, below the minimum of ${rate.minBytesPerSecond} bytes/s over ${rate.windowMs / 1000} s; the bytes received before were kept, resume the upload from its Range`);
    }
    windowStart = t;
    received = 0;
  };
  const wrapped: BodySink = {
    write: (chunk) => {
      check(chunk.length);
      return sink.write(chunk);
    },
    onDrain: (cb) => sink.onDrain(() => {
      windowStart = now();
      received = 0;
      cb();
    }),
  };
  if (sink.region && sink.commit) {
    const region = sink.region.bind(sink);
    const commit = sink.commit.bind(sink);
    wrapped.region = region;
    wrapped.commit = (n) => {
      check(n);
      return commit(n);
    };
  }
  return wrapped;
}
