/**
 * The `_state` capability of an upload session's Location (uploads.ts): it admits the session's
 * own requests without credentials (admission.ts) and names the node that owns the session, so
 * a request that reaches another node is told so at once, with no read (docs/storage.md "Where a
 * session lives").
 *
 * Format: `<node>~<signature>`, the signature being the server key's HMAC (purpose
 * `upload-state`) of `<session id>:<repository>:<node>`; a node name never contains `~`
 * (engine/blobs/node-name.ts) and base64url never does. Without a node name (single-node tools
 * and tests) and from builds before node names: the bare signature of `<session id>:<repository>`,
 * still accepted so that Locations handed out before an upgrade keep working.
 */
import { timingSafeEqual } from 'node:crypto';
import type { ServerKeys } from '../../engine/identity/keys.js';
import { RecentMap } from '../../engine/recent-map.js';

/**
 * Most sessions' requests are a run of PATCHes that each verify the `_state` they carry and sign
 * the same value again for their Location (one session, one repository, one node: one value under
 * one key). The memo keeps the values this process signed with its signing key, per
 * `ServerKeys` instance (whose keys never change), so a session's later requests compare bytes in
 * constant time instead of computing two HMACs (bench/README.md "Chunked push per PATCH: the
 * `_state` memo"). Only values this process signed enter it: any other `_state` (forged, or
 * signed by the accepted key or before a restart) gets the full check. Bounded: it keeps the
 * latest MEMO_ENTRIES / 2 to MEMO_ENTRIES (engine/recent-map.ts; a Location signed again later is
 * the same value). Signatures are kept as strings: a small Buffer made from a string is a view on
 * an 8 KiB slab of Node's shared pool and would keep the whole slab alive (4096 entries: up to 32
 * MiB; bench/README.md "Growth"); the compare makes its Buffers when it runs.
 */
const MEMO_ENTRIES = 4096;
const memos = new WeakMap<ServerKeys, RecentMap<string, string>>();

function memoFor(keys: ServerKeys): RecentMap<string, string> {
  let memo = memos.get(keys);
  if (!memo) memos.set(keys, (memo = new RecentMap(MEMO_ENTRIES)));
  return memo;
}

/** The signing key's signature of `data` (purpose `upload-state`), from the memo when there. */
function signed(keys: ServerKeys, data: string): string {
  const memo = memoFor(keys);
  const known = memo.get(data);
  if (known) return known;
  const signature = keys.sign('upload-state', data);
  memo.set(data, signature);
  return signature;
}

/** Whether `signature` is the server's for `data`: a constant-time compare with the memo, else the keys' check. */
function verified(keys: ServerKeys, data: string, signature: string): boolean {
  const memo = memoFor(keys);
  const text = memo.get(data);
  if (text !== undefined) {
    const known = Buffer.from(text);
    const presented = Buffer.from(signature);
    if (known.length === presented.length && timingSafeEqual(known, presented)) return true;
  }
  return keys.verify('upload-state', data, signature);
}

/** The `_state` value for session `id` of `repository`, owned by `node` ('' = no node name). */
export function signUploadState(keys: ServerKeys, id: string, repository: string, node: string): string {
  if (node === '') return signed(keys, `${id}:${repository}`);
  return `${node}~${signed(keys, `${id}:${repository}:${node}`)}`;
}

/**
 * Checks a `_state` value for session `id` of `repository`.
 * @returns the owning node's name ('' for the format without one) when the signature is the
 *          server's, else undefined.
 */
export function verifyUploadState(keys: ServerKeys, id: string, repository: string, state: string): string | undefined {
  const tilde = state.lastIndexOf('~');
  if (tilde < 0) return verified(keys, `${id}:${repository}`, state) ? '' : undefined;
  const node = state.slice(0, tilde);
  return verified(keys, `${id}:${repository}:${node}`, state.slice(tilde + 1)) ? node : undefined;
}
