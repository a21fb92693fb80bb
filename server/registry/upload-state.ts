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
import type { ServerKeys } from '../../engine/identity/keys.js';

/** The `_state` value for session `id` of `repository`, owned by `node` ('' = no node name). */
export function signUploadState(keys: ServerKeys, id: string, repository: string, node: string): string {
  if (node === '') return keys.sign('upload-state', `${id}:${repository}`);
  return `${node}~${keys.sign('upload-state', `${id}:${repository}:${node}`)}`;
}

/**
 * Checks a `_state` value for session `id` of `repository`.
 * @returns the owning node's name ('' for the format without one) when the signature is the
 *          server's, else undefined.
 */
export function verifyUploadState(keys: ServerKeys, id: string, repository: string, state: string): string | undefined {
  const tilde = state.lastIndexOf('~');
  if (tilde < 0) return keys.verify('upload-state', `${id}:${repository}`, state) ? '' : undefined;
  const node = state.slice(0, tilde);
  return keys.verify('upload-state', `${id}:${repository}:${node}`, state.slice(tilde + 1)) ? node : undefined;
}
