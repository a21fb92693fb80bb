/**
 * Layer blobs a hostile tenant pushes, built in milliseconds: gzip allows several members one
 * after the other (RFC 1952 §2.2) and gunzip inflates them as one stream, so one compressed
 * member repeated gives any inflated size from a few MiB.
 * - `inflatingLayer`: a tar holding one file of zeros (`GiB` of them from about a MiB per GiB);
 * - `manyEntriesLayer`: a tar of `entries` empty files (one 512-byte header each).
 * Also used by the fault tests: test/faults/hostile-layers.test.ts.
 */
import { gzipSync } from 'node:zlib';

const BLOCK = 512;

/** A ustar header (POSIX.1-1988 tar) of a regular file `name` of `size` bytes (< 8 GiB). */
export function tarHeader(name: string, size: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  const field = (offset: number, length: number, value: string) => h.write(value, offset, length, 'ascii');
  const octal = (n: number, digits: number) => n.toString(8).padStart(digits, '0');
  field(0, 100, name);
  field(100, 8, octal(0o644, 7));
  field(108, 8, octal(0, 7));
  field(116, 8, octal(0, 7));
  field(124, 12, octal(size, 11));
  field(136, 12, octal(0, 11));
  field(156, 1, '0');
  field(257, 6, 'ustar');
  field(263, 2, '00');
  h.fill(0x20, 148, 156); // the checksum counts its own field as spaces
  let sum = 0;
  for (const b of h) sum += b;
  field(148, 8, octal(sum, 6) + '\0 ');
  return h;
}

/** Gzip members of `chunk` repeated so that the whole inflates to `total` bytes (a multiple of chunk.length). */
function repeated(chunk: Buffer, total: number): Buffer[] {
  const member = gzipSync(chunk, { level: 9 });
  return new Array<Buffer>(Math.ceil(total / chunk.length)).fill(member);
}

/** A gzip-compressed tar with one file of `bytes` zeros (a multiple of 64 MiB, below 8 GiB). */
export function inflatingLayer(bytes: number): Buffer {
  const chunk = Buffer.alloc(64 * 1024 * 1024);
  if (bytes % chunk.length !== 0) throw new Error('inflatingLayer: size must be a multiple of 64 MiB');
  return Buffer.concat([gzipSync(tarHeader('zeros', bytes)), ...repeated(chunk, bytes), gzipSync(Buffer.alloc(2 * BLOCK))]);
}

/** A gzip-compressed tar of `entries` empty files, each named `name` (`entries` a multiple of 10 000). */
export function manyEntriesLayer(entries: number, name = 'f'): Buffer {
  const per = 10_000;
  if (entries % per !== 0) throw new Error('manyEntriesLayer: entries must be a multiple of 10000');
  const chunk = Buffer.concat(new Array<Buffer>(per).fill(tarHeader(name, 0)));
  return Buffer.concat([...repeated(chunk, entries * BLOCK), gzipSync(Buffer.alloc(2 * BLOCK))]);
}
