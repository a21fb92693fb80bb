/**
 * Decoder for the chunked transfer coding (RFC 9112 §7.1), as docker sends layer PATCHes.
 * Byte-level state machine: chunk sizes up to 2^53 - 1, extensions skipped (bounded), trailer
 * fields read and dropped (bounded). Payload bytes are handed on as views of the input, never
 * copied.
 */
import { HttpParseError } from './h1-head.js';

const enum State { Size, Extension, SizeLf, Data, DataCr, DataLf, TrailerStart, Trailer, TrailerLf, EndLf, Done }

/** Longest chunk-size line (hex digits plus extensions) accepted, in bytes. */
const MAX_SIZE_LINE = 1024;
/** Largest trailer section accepted, in bytes. */
const MAX_TRAILER = 16 * 1024;

export class ChunkedDecoder {
  #state = State.Size;
  #size = 0;
  #digits = 0;
  #lineBytes = 0;
  #trailerBytes = 0;
  #remaining = 0;

  /** True once the last chunk and the trailer section were read. */
  get done(): boolean {
    return this.#state === State.Done;
  }

  /**
   * Decodes as much of `buf` as belongs to this message.
   * @param onData receives payload bytes (views of `buf`, valid during the call)
   * @returns bytes of `buf` consumed; fewer than `buf.length` only when the message ended
   * @throws HttpParseError 400 on a malformed coding
   */
  feed(buf: Buffer, onData: (payload: Buffer) => void): number {
    let i = 0;
    while (i < buf.length && this.#state !== State.Done) {
      if (this.#state === State.Data) {
        const n = Math.min(this.#remaining, buf.length - i);
        onData(buf.subarray(i, i + n));
        i += n;
        this.#remaining -= n;
        if (this.#remaining === 0) this.#state = State.DataCr;
        continue;
      }
      this.#step(buf[i]!);
      i++;
    }
    return i;
  }

  #step(b: number): void {
    switch (this.#state) {
      case State.Size: {
        const v = hexValue(b);
        if (v >= 0) {
          if (++this.#digits > 13) throw bad('chunk size too large');
          this.#size = this.#size * 16 + v;
        } else if (this.#digits > 0 && (b === 0x3b || b === 0x20 || b === 0x09)) {
          this.#state = State.Extension; // ";ext" (optionally after whitespace)
        } else if (this.#digits > 0 && b === 0x0d) {
          this.#state = State.SizeLf;
        } else {
          throw bad('malformed chunk size');
        }
        this.#line();
        return;
      }
      case State.Extension:
        if (b === 0x0d) this.#state = State.SizeLf;
        else if (b === 0x0a || b === 0) throw bad('malformed chunk extension');
        this.#line();
        return;
      case State.SizeLf:
        if (b !== 0x0a) throw bad('chunk size line not ended by CRLF');
        if (this.#size > Number.MAX_SAFE_INTEGER) throw bad('chunk size too large');
        this.#remaining = this.#size;
        this.#state = this.#size === 0 ? State.TrailerStart : State.Data;
        this.#size = 0;
        this.#digits = 0;
        this.#lineBytes = 0;
        return;
      case State.DataCr:
        if (b !== 0x0d) throw bad('chunk data not followed by CRLF');
        this.#state = State.DataLf;
        return;
      case State.DataLf:
        if (b !== 0x0a) throw bad('chunk data not followed by CRLF');
        this.#state = State.Size;
        return;
      case State.TrailerStart:
        this.#state = b === 0x0d ? State.EndLf : State.Trailer;
        this.#trailer();
        return;
      case State.Trailer:
        if (b === 0x0d) this.#state = State.TrailerLf;
        else if (b === 0x0a) throw bad('trailer field not ended by CRLF');
        this.#trailer();
        return;
      case State.TrailerLf:
        if (b !== 0x0a) throw bad('trailer field not ended by CRLF');
        this.#state = State.TrailerStart;
        this.#trailer();
        return;
      case State.EndLf:
        if (b !== 0x0a) throw bad('chunked body not ended by CRLF');
        this.#state = State.Done;
        return;
      default:
        throw bad('unexpected byte');
    }
  }

  #line(): void {
    if (++this.#lineBytes > MAX_SIZE_LINE) throw bad('chunk size line too long');
  }

  #trailer(): void {
    if (++this.#trailerBytes > MAX_TRAILER) throw bad('trailer section too large');
  }
}

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  return -1;
}

function bad(message: string): HttpParseError {
  return new HttpParseError(400, message);
}
