/**
 * The `_state` capability of upload Locations (server/registry/upload-state.ts), on one node:
 * it names the node (SLIPWAY_NODE_NAME) and admits the session's requests; a `_state` in the
 * format of builds before node names (the bare signature) still admits them; one whose node was
 * changed is refused (401) and changes nothing; a `_state` naming another node for a session this
 * node does not have gets 404 BLOB_UPLOAD_UNKNOWN naming that node.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startInProcess } from '../helpers/harness.js';
import { basic, createApp, errCode, errMessage, http } from '../helpers/http.js';
import { sha256 } from '../helpers/image.js';
import { startUpload, withDigest } from '../helpers/registry.js';
import { ServerKeys } from '../../engine/identity/keys.js';
import { signUploadState } from '../../server/registry/upload-state.js';

t.test('upload _state names the node', async (t) => {
  const serverKey = randomBytes(32).toString('base64');
  const s = await startInProcess({ env: { SLIPWAY_NODE_NAME: 'solo-1', SLIPWAY_SERVER_KEY: serverKey } });
  t.teardown(() => s.stop());
  const keys = ServerKeys.load({ dataDir: s.dataDir, serverKey });
  t.equal((await createApp(s.api, s.apiKey!, 'app')).status, 201);
  const me = { registry: s.urls.registry, auth: basic('_', s.apiKey!) };
  const loc = await startUpload(me, 'app/web');
  const url = new URL(loc);
  const id = url.pathname.split('/').pop()!;
  t.match(url.searchParams.get('_state'), /^solo-1~[A-Za-z0-9_-]+$/, 'the capability names the node');
  const withState = (state: string) => { const u = new URL(loc); u.searchParams.set('_state', state); return u.toString(); };
  const chunk = randomBytes(1000);

  const forged = await http('PATCH', withState(url.searchParams.get('_state')!.replace(/^solo-1~/, 'solo-2~')), { body: chunk });
  t.equal(forged.status, 401, 'a capability whose node was changed is refused');
  t.equal((await http('GET', loc)).headers.range, '0-0', 'nothing written');

  const legacy = withState(signUploadState(keys, id, 'app/web', ''));
  t.equal((await http('PATCH', legacy, { body: chunk })).status, 202, 'the format without a node still admits');
  const done = await http('PUT', withDigest(loc, sha256(chunk)));
  t.equal(done.status, 201, done.text);

  const other = withState(signUploadState(keys, 'f'.repeat(32), 'app/web', 'solo-2')).replace(id, 'f'.repeat(32));
  const r = await http('GET', other);
  t.equal(r.status, 404);
  t.equal(errCode(r), 'BLOB_UPLOAD_UNKNOWN');
  t.match(errMessage(r), /belongs to node "solo-2"/, "another node's session: the message names it");
  const mine = await http('GET', withState(signUploadState(keys, 'e'.repeat(32), 'app/web', 'solo-1')).replace(id, 'e'.repeat(32)));
  t.equal(errCode(mine), 'BLOB_UPLOAD_UNKNOWN');
  t.notMatch(errMessage(mine), /belongs to node/, 'an unknown session of this node: the plain message');
});
