/**
 * The memo of `_state` values (server/registry/upload-state.ts): a session's later requests are
 * checked against the value this process signed, in constant time, and nothing the full HMAC
 * check refuses is admitted through it: a changed signature, another session's or repository's
 * value, another key's; a value signed by the accepted key (key rotation) is still admitted by
 * the full check; past the memo's bound the values stay the same and keep verifying.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ServerKeys } from '../../engine/identity/keys.js';
import { signUploadState, verifyUploadState } from '../../server/registry/upload-state.js';

/** `state` with the last signature character changed (same length, still base64url). */
function altered(state: string): string {
  const last = state.at(-1)!;
  return state.slice(0, -1) + (last === 'A' ? 'B' : 'A');
}

t.test('memoised values verify exactly like the full check', async (t) => {
  const keys = new ServerKeys(randomBytes(32));
  const id = 'a'.repeat(32);
  for (const node of ['n1', '']) {
    const state = signUploadState(keys, id, 'app/web', node);
    t.equal(signUploadState(keys, id, 'app/web', node), state, 'signed again: the same value');
    t.equal(verifyUploadState(keys, id, 'app/web', state), node, 'the signed value verifies');
    t.equal(verifyUploadState(keys, id, 'app/web', altered(state)), undefined, 'a changed signature is refused');
    t.equal(verifyUploadState(keys, id, 'app/web', `${state}A`), undefined, 'a longer one is refused');
    t.equal(verifyUploadState(keys, id, 'app/other', state), undefined, "another repository's session is refused");
    t.equal(verifyUploadState(keys, 'b'.repeat(32), 'app/web', state), undefined, 'another session is refused');
    t.equal(verifyUploadState(new ServerKeys(randomBytes(32)), id, 'app/web', state), undefined, 'another key refuses it');
  }
  const moved = signUploadState(keys, id, 'app/web', 'n1').replace(/^n1~/, 'n2~');
  t.equal(verifyUploadState(keys, id, 'app/web', moved), undefined, 'a value whose node was changed is refused');
});

t.test('a value of the accepted key verifies; the signing key signs', async (t) => {
  const oldKey = randomBytes(32);
  const before = new ServerKeys(oldKey);
  const after = new ServerKeys(randomBytes(32), oldKey);
  const id = 'c'.repeat(32);
  const old = signUploadState(before, id, 'app/web', 'n1');
  const fresh = signUploadState(after, id, 'app/web', 'n1'); // memoised for `after`
  t.not(fresh, old, 'the signing key makes a different value');
  t.equal(verifyUploadState(after, id, 'app/web', old), 'n1', "the accepted key's value still verifies");
  t.equal(verifyUploadState(after, id, 'app/web', fresh), 'n1');
  t.equal(signUploadState(after, id, 'app/web', 'n1'), fresh, 'verifying the old value did not replace the memo');
});

t.test('past the memo bound, values stay the same and verify', async (t) => {
  const keys = new ServerKeys(randomBytes(32));
  const ids = Array.from({ length: 5000 }, (_, i) => i.toString(16).padStart(32, '0'));
  const states = ids.map((id) => signUploadState(keys, id, 'app/web', 'n1'));
  t.equal(verifyUploadState(keys, ids[0]!, 'app/web', states[0]!), 'n1', 'an evicted value verifies by the full check');
  t.equal(signUploadState(keys, ids[0]!, 'app/web', 'n1'), states[0], 'and is signed the same again');
  t.equal(verifyUploadState(keys, ids[4999]!, 'app/web', states[4999]!), 'n1');
  t.equal(verifyUploadState(keys, ids[0]!, 'app/web', states[1]!), undefined, "a neighbour's value is refused");
});
