/**
 * Hash thread (workers/hash-thread.ts): keeps one node:crypto sha256 per upload session and
 * hashes the shared buffers it is sent, in the order received.
 *
 * Messages in: {op:'update', id, sab, offset, length, seq} | {op:'write', id, parts, fd, position,
 * seq} | {op:'digest', id, seq} | {op:'drop', id}. A write's parts ({sab, offset, length, hash})
 * are written in order from `position` of `fd` (a descriptor of the process's), each flagged one
 * hashed just before its write, so the write reads what the hash brought into the caches.
 * Replies: {seq} after an update, {seq, written} after a write ({seq, written, error: {code,
 * message}} when it failed after `written` bytes), {seq, hex} after a digest (hex null for an
 * unknown id).
 */
import { parentPort } from 'node:worker_threads';
import { createHash, type Hash } from 'node:crypto';
import { writeSync } from 'node:fs';

type Message =
  | { op: 'update'; id: number; sab: SharedArrayBuffer; offset: number; length: number; seq: number }
  | { op: 'write'; id: number; parts: Array<{ sab: SharedArrayBuffer; offset: number; length: number; hash: boolean }>; fd: number; position: number; seq: number }
  | { op: 'digest'; id: number; seq: number }
  | { op: 'drop'; id: number };

const hashes = new Map<number, Hash>();
const port = parentPort!;

function hashOf(id: number): Hash {
  let h = hashes.get(id);
  if (!h) hashes.set(id, (h = createHash('sha256')));
  return h;
}

/** Writes every part of a write message, hashing the flagged ones first; the bytes written. */
function hashAndWrite(m: Extract<Message, { op: 'write' }>, written: { bytes: number }): void {
  let at = m.position;
  for (const p of m.parts) {
    const view = new Uint8Array(p.sab, p.offset, p.length);
    if (p.hash) hashOf(m.id).update(view);
    for (let off = 0; off < view.length; ) {
      const n = writeSync(m.fd, view, off, view.length - off, at);
      // A write that takes nothing would loop for ever: only a full medium does that.
      if (n === 0) throw Object.assign(new Error('the write took no bytes'), { code: 'ENOSPC' });
      off += n;
      at += n;
      written.bytes += n;
    }
  }
}

port.on('message', (m: Message) => {
  if (m.op === 'update') {
    hashOf(m.id).update(new Uint8Array(m.sab, m.offset, m.length));
    port.postMessage({ seq: m.seq });
  } else if (m.op === 'write') {
    const written = { bytes: 0 };
    try {
      hashAndWrite(m, written);
      port.postMessage({ seq: m.seq, written: written.bytes });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      port.postMessage({ seq: m.seq, written: written.bytes, error: { message: err.message, ...(typeof err.code === 'string' ? { code: err.code } : {}) } });
    }
  } else if (m.op === 'digest') {
    const h = hashes.get(m.id);
    hashes.delete(m.id);
    port.postMessage({ seq: m.seq, hex: h ? h.digest('hex') : null });
  } else {
    hashes.delete(m.id);
  }
});
