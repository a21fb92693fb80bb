/**
 * Node names: which node of a deployment owns an upload session (docs/storage.md "Where a
 * session lives"). A session's record carries its node's name (`UploadRecord.node`), its S3 key
 * does too (`<prefix>uploads/<node>/<id>/data`), and so does the `_state` capability of its
 * Location, so a node serves, recovers and reaps only its own sessions and can tell at once that
 * a request addresses another node's.
 *
 * A name is 1 to 63 characters of `A-Z a-z 0-9 . _ -`, starting with a letter or digit: safe in
 * an S3 key segment, a URL query value and a metadata record, with no separator of the key
 * layout (`/`) or of the capability (`~`). It must not look like a session id (32 lowercase hex
 * characters), which the S3 layout of builds without node names put in the same position.
 */
import { hostname } from 'node:os';
import { isUploadId } from './records.js';

const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** Whether `name` is a valid node name (see the file header). */
export function isNodeName(name: string): boolean {
  return NODE_NAME.test(name) && !isUploadId(name);
}

/**
 * Checks a node name.
 * @param from where the value came from, for the message (`environment variable SLIPWAY_NODE_NAME`)
 * @throws Error naming `from` and the rule when `name` is not a valid node name.
 */
export function checkNodeName(name: string, from: string): string {
  if (!isNodeName(name)) {
    throw new Error(`${from}: "${name.slice(0, 80)}" is not a node name (1-63 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit, not 32 hex characters)`);
  }
  return name;
}

/**
 * The default node name: this machine's host name, cut to its first label and to the allowed
 * characters (others become `-`), or `node` when nothing usable remains. An embedded
 * installation (one node) never needs to set it; nodes sharing one database must have distinct
 * names (containers get distinct host names by default).
 */
export function defaultNodeName(host: string = hostname()): string {
  const label = host.split('.')[0]!.replace(/[^A-Za-z0-9_-]/g, '-').replace(/^[-_]+/, '').slice(0, 63);
  return isNodeName(label) ? label : 'node';
}
