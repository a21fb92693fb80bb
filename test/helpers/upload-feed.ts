/**
 * Feeding an upload writer (engine/blobs/writer.ts) the way the transports do: pieces copied in
 * with `write`, or read into the writer's own buffer (`region` + `commit`, the upload host's
 * zero-copy path), waiting for `onDrain` whenever the writer asks for a pause.
 */
import type { UploadWriter } from '../../engine/blobs/writer.js';

/** One piece of a feed. */
export interface FeedStep {
  /** Bytes in the piece (fewer at the end of the data, or when the region is smaller). */
  size: number;
  /** Placed into the writer's region (zero-copy) instead of copied by `write`, when it offers one. */
  region: boolean;
  /** Waited for after the piece when the writer did not ask for a pause (random timing in race tests). */
  idle?: () => Promise<void>;
}

/**
 * Feeds all of `data` to `writer`, piece `i` as `step(i)` says.
 * @returns how many times the writer asked for a pause
 * @throws the writer's error (a failed write) from `write` or `commit`
 */
export async function feedWriter(writer: UploadWriter, data: Buffer, step: (i: number) => FeedStep): Promise<number> {
  let off = 0;
  let pauses = 0;
  for (let i = 0; off < data.length; i++) {
    const s = step(i);
    const size = Math.min(data.length - off, s.size);
    let more: boolean;
    const region = s.region ? writer.region() : null;
    if (region) {
      const n = Math.min(size, region.length);
      data.copy(region, 0, off, off + n);
      off += n;
      more = writer.commit(n);
    } else {
      more = writer.write(data.subarray(off, off + size));
      off += size;
    }
    if (!more) {
      pauses++;
      await new Promise<void>((resolve) => writer.onDrain(resolve));
    } else if (s.idle) {
      await s.idle();
    }
  }
  return pauses;
}
