/**
 * Decoder for the chunked transfer coding (RFC 9112 §7.1), as docker sends layer PATCHes.
 * Byte-level state machine, as strict as llhttp: a chunk size is hex digits (up to 2^53 - 1)
 * followed directly by CRLF or by chunk extensions, `;name[=token|"quoted-string"]` with no
 * whitespace (§7.1.1; llhttp refuses the BWS the grammar allows, and so does this), read and
 * dropped (bounded). Trailer lines are parsed as field lines (§7.1.2, h1-head.ts
 * `parseFieldLine`): no obs-fold, no whitespace before the colon, no control bytes; a trailer
 * naming Content-Length, Transfer-Encoding, Host, Connection, Keep-Alive or Upgrade is refused
 * (RFC 9110 §6.5.1: fields that frame or route a message cannot be sent in a trailer; one there
 * is a smuggling attempt).
 * Valid trailer fields are dropped, never merged into the head (RFC 9110 §6.5.2). Payload bytes
 * are handed on as views of the input, never copied.
 */
import { HttpParseError, parseFieldLine } from './h1-head.js';

const enum State {
  Size, SizeDigits, ExtNameStart, ExtName, ExtValueStart, ExtToken, ExtQuoted, ExtQuotedPair, ExtQuotedEnd, SizeLf,
  Data, DataCr, DataLf, TrailerStart, TrailerLine, TrailerLf, EndLf, Done,
}

/** Longest chunk-size line (hex digits plus extensions) accepted, in bytes. */
const MAX_SIZE_LINE = 1024;
/** Largest trailer section accepted, in bytes. */
const MAX_TRAILER = 16 * 1024;
/**
 * Fields that frame or route a message or manage the connection: refused in a trailer section.
 * llhttp acts on a `Connection: close` trailer (it reads nothing after the message); ignoring it
 * would read a request a proxy honouring it never sends on, so it is refused instead.
 */
const FORBIDDEN_TRAILERS = new Set(['content-length', 'transfer-encoding', 'host', 'connection', 'keep-alive', 'upgrade']);

/** Byte classes: 1 tchar (RFC 9110 §5.6.2), 2 qdtext (§5.6.4), 4 HTAB / SP / VCHAR / obs-text (quoted-pair). */
const CLASS = new Uint8Array(256);
for (let b = 0; b < 256; b++) {
  const vchar = b >= 0x21 && b <= 0x7e;
  if (vchar && !'"(),/:;<=>?@[\\]{}'.includes(String.fromCharCode(b))) CLASS[b]! |= 1;
  if (b === 0x09 || b === 0x20 || b === 0x21 || (b >= 0x23 && b <= 0x5b) || (b >= 0x5d && b <= 0x7e) || b >= 0x80) CLASS[b]! |= 2;
  if (b === 0x09 || b === 0x20 || vchar || b >= 0x80) CLASS[b]! |= 4;
}
const TCHAR = 1;
const QDTEXT = 2;
const QUOTABLE = 4;

export class ChunkedDecoder {
  #state = State.Size;
  #size = 0;
  #digits = 0;
  #lineBytes = 0;
  #trailerSize = 0;
  #trailerLine = '';
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
      case State.Size:
      case State.SizeDigits: {
        const v = hexValue(b);
        if (v >= 0) {
          // Leading zeros do not count towards the 13 digits (2^52).
          if ((this.#size > 0 || v > 0) && ++this.#digits > 13) throw bad('chunk size too large');
          this.#size = this.#size * 16 + v;
          this.#state = State.SizeDigits;
        } else if (this.#state === State.SizeDigits && b === 0x3b) {
          this.#state = State.ExtNameStart;
        } else if (this.#state === State.SizeDigits && b === 0x0d) {
          this.#state = State.SizeLf;
        } else {
          throw bad('malformed chunk size');
        }
        return this.#line();
      }
      case State.ExtNameStart:
        if (!(CLASS[b]! & TCHAR)) throw bad('malformed chunk extension');
        this.#state = State.ExtName;
        return this.#line();
      case State.ExtName:
        if (b === 0x3d) this.#state = State.ExtValueStart;
        else this.#afterExtension(b, TCHAR);
        return this.#line();
      case State.ExtValueStart:
        if (b === 0x22) this.#state = State.ExtQuoted;
        else if (CLASS[b]! & TCHAR) this.#state = State.ExtToken;
        else throw bad('malformed chunk extension');
        return this.#line();
      case State.ExtToken:
        this.#afterExtension(b, TCHAR);
        return this.#line();
      case State.ExtQuoted:
        if (b === 0x22) this.#state = State.ExtQuotedEnd;
        else if (b === 0x5c) this.#state = State.ExtQuotedPair;
        else if (!(CLASS[b]! & QDTEXT)) throw bad('malformed chunk extension');
        return this.#line();
      case State.ExtQuotedPair:
        if (!(CLASS[b]! & QUOTABLE)) throw bad('malformed chunk extension');
        this.#state = State.ExtQuoted;
        return this.#line();
      case State.ExtQuotedEnd:
        this.#afterExtension(b, 0);
        return this.#line();
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
        if (b === 0x0d) {
          this.#state = State.EndLf;
          return;
        }
        this.#trailerLine = '';
        this.#state = State.TrailerLine;
        return this.#trailerByte(b);
      case State.TrailerLine:
        return this.#trailerByte(b);
      case State.TrailerLf: {
        if (b !== 0x0a) throw bad('trailer field not ended by CRLF');
        const [name] = parseFieldLine(this.#trailerLine);
        if (FORBIDDEN_TRAILERS.has(name)) throw bad(`${name} is not allowed in a trailer`);
        this.#state = State.TrailerStart;
        return;
      }
      case State.EndLf:
        if (b !== 0x0a) throw bad('chunked body not ended by CRLF');
        this.#state = State.Done;
        return;
      default:
        throw bad('unexpected byte');
    }
  }

  /** After an extension name or value: more of it (`stay` class), another extension, or the end of the line. */
  #afterExtension(b: number, stay: number): void {
    if (b === 0x3b) this.#state = State.ExtNameStart;
    else if (b === 0x0d) this.#state = State.SizeLf;
    else if (!(CLASS[b]! & stay)) throw bad('malformed chunk extension');
  }

  #line(): void {
    if (++this.#lineBytes > MAX_SIZE_LINE) throw bad('chunk size line too long');
  }

  /** A byte of a trailer line: CR ends it, a bare LF is refused. */
  #trailerByte(b: number): void {
    if (++this.#trailerSize > MAX_TRAILER) throw bad('trailer section too large');
    if (b === 0x0d) this.#state = State.TrailerLf;
    else if (b === 0x0a) throw bad('trailer field not ended by CRLF');
    else this.#trailerLine += String.fromCharCode(b);
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
