/**
 * Hash thread (workers/hash-thread.ts): keeps one node:crypto sha256 per upload session and
 * hashes the shared buffers it is sent, in the order received.
 *
 * Messages in: {op:'update', id, sab, offset, length, seq} | {op:'digest', id, seq} | {op:'drop', id}.
 * Replies: {seq} after an update, {seq, hex} after a digest (hex null for an unknown id).
 */
import { parentPort } from 'node:worker_threads';
import { createHash, type Hash } from 'node:crypto';

type Message =
  | { op: 'update'; id: number; sab: SharedArrayBuffer; offset: number; length: number; seq: number }
  | { op: 'digest'; id: number; seq: number }
  | { op: 'drop'; id: number };

const hashes = new Map<number, Hash>();
const port = parentPort!;

port.on('message', (m: Message) => {
  if (m.op === 'update') {
    let h = hashes.get(m.id);
    if (!h) hashes.set(m.id, (h = createHash('sha256')));
    h.update(new Uint8Array(m.sab, m.offset, m.length));
    port.postMessage({ seq: m.seq });
  } else if (m.op === 'digest') {
    const h = hashes.get(m.id);
    hashes.delete(m.id);
    port.postMessage({ seq: m.seq, hex: h ? h.digest('hex') : null });
  } else {
    hashes.delete(m.id);
  }
});
