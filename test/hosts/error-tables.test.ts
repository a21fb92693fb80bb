/**
 * The error model (docs/architecture.md "Errors"): every host's table maps every engine
 * condition (the types make it complete at compile time, this checks it at run time), and the
 * conditions whose names differ from the wire codes they are sent as still produce those wire
 * codes through HTTP.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ERROR_CODES, ERROR_CONDITIONS, type ErrorCode } from '../../engine/errors.js';
import type { ErrorTable } from '../../server/http/error-table.js';
import { REGISTRY_ERRORS } from '../../server/registry/error-codes.js';
import { API_ERRORS } from '../../server/api/error-codes.js';
import { OAUTH_ERRORS } from '../../server/auth-host/oauth-errors.js';
import { PAGE_ERRORS } from '../../server/auth-host/page-errors.js';
import { startServer, tempDir } from '../helpers/server.js';
import { basic, createApp, errCode, http } from '../helpers/http.js';
import { pushBlob, startUpload, type Target } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';

/** Each table; a row has a wire `code`, or a `heading` for pages. */
const TABLES: Record<string, ErrorTable<{ status: number; description: string; code?: string; heading?: string }>> = { registry: REGISTRY_ERRORS, api: API_ERRORS, oauth: OAUTH_ERRORS, pages: PAGE_ERRORS };

t.test('every engine condition is described and every host table maps exactly the engine codes', async (t) => {
  t.ok(ERROR_CODES.length > 0);
  for (const code of ERROR_CODES) t.ok(ERROR_CONDITIONS[code].length > 10, `${code} is described`);
  for (const [host, table] of Object.entries(TABLES)) {
    t.same(Object.keys(table).sort(), [...ERROR_CODES].sort(), `${host}: one row per engine code, no others`);
    for (const code of ERROR_CODES) {
      const row = table[code];
      const wireCode = row.code ?? row.heading;
      t.ok(typeof wireCode === 'string' && wireCode.length > 0 && row.description.length > 0, `${host} ${code}: wire code (page heading) and description`);
      t.ok(Number.isInteger(row.status) && row.status >= 400 && row.status < 600, `${host} ${code}: an error status`);
    }
  }
});

t.test('renamed conditions keep their wire codes', async (t) => {
  const wire = (table: ErrorTable, code: ErrorCode) => ({ code: table[code].code, status: table[code].status });
  t.same(wire(REGISTRY_ERRORS, 'CHUNK_RANGE_MISMATCH'), { code: 'BLOB_UPLOAD_INVALID', status: 416 });
  t.same(wire(REGISTRY_ERRORS, 'BYTE_RANGE_INVALID'), { code: 'BLOB_UPLOAD_INVALID', status: 416 });
  t.same(wire(REGISTRY_ERRORS, 'RANGE_NOT_SATISFIABLE'), { code: 'RANGE_INVALID', status: 416 });
  t.same(wire(REGISTRY_ERRORS, 'METHOD_NOT_ALLOWED'), { code: 'UNSUPPORTED', status: 405 });
  t.same(wire(API_ERRORS, 'CHUNK_RANGE_MISMATCH'), { code: 'requested_range_not_satisfiable', status: 416 });
  t.same(wire(API_ERRORS, 'METHOD_NOT_ALLOWED'), { code: 'method_not_allowed', status: 405 });
  t.same(wire(OAUTH_ERRORS, 'METHOD_NOT_ALLOWED'), { code: 'invalid_request', status: 405 });
  for (const code of ERROR_CODES) {
    t.equal(PAGE_ERRORS[code].status, API_ERRORS[code].status, `${code}: a page answers with the API's status`);
    t.equal(PAGE_ERRORS[code].heading, PAGE_ERRORS[code].status === 404 ? 'Not found' : 'Request refused', `${code}: page heading`);
  }
});

t.test('through HTTP', async (t) => {
  const tmp = tempDir();
  const server = await startServer(tmp.dir);
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const key = server.apiKey!;
  const reg = server.urls.registry;
  const me: Target = { registry: reg, auth: basic('_', key) };
  await createApp(server.urls.api, key, 'errapp');

  // RANGE_NOT_SATISFIABLE → 416 RANGE_INVALID with the blob's size.
  const bytes = randomBytes(1000);
  t.equal((await pushBlob(me, 'errapp/web', bytes)).status, 201);
  const past = await http('GET', `${reg}/v2/errapp/web/blobs/${sha256(bytes)}`, { headers: { ...me.auth, range: 'bytes=1000-' } });
  t.equal(past.status, 416);
  t.equal(errCode(past), 'RANGE_INVALID');
  t.equal(past.headers['content-range'], 'bytes */1000');

  // CHUNK_RANGE_MISMATCH → 416 BLOB_UPLOAD_INVALID with the session's Range.
  const loc = await startUpload(me, 'errapp/web');
  const chunk = await http('PATCH', loc, { body: bytes.subarray(0, 10), headers: { 'content-range': '10-19', 'content-length': '10' } });
  t.equal(chunk.status, 416);
  t.equal(errCode(chunk), 'BLOB_UPLOAD_INVALID');
  t.equal(chunk.headers.range, '0-0', 'the session\'s Range (nothing received yet)');

  // METHOD_NOT_ALLOWED → registry 405 UNSUPPORTED, API 405 method_not_allowed, token endpoint 405 invalid_request.
  const manifest = await http('PATCH', `${reg}/v2/errapp/web/manifests/latest`, { headers: me.auth });
  t.equal(manifest.status, 405);
  t.equal(errCode(manifest), 'UNSUPPORTED');
  t.ok(manifest.headers.allow);
  const account = await http('PUT', `${server.urls.api}/account`, { headers: { authorization: `Bearer ${key}`, accept: 'application/vnd.slipway+json; version=3' } });
  t.equal(account.status, 405);
  t.equal(account.json?.id, 'method_not_allowed');
  const token = await http('GET', `${server.urls.auth}/oauth/token`);
  t.equal(token.status, 405);
  t.equal(token.json?.error, 'invalid_request');
  t.equal(token.headers.allow, 'POST');

  // An auth host page refusal: BAD_REQUEST → 400 "Request refused".
  const page = await http('POST', `${server.urls.auth}/login`, { headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(page.status, 400);
  t.match(page.text, /Request refused/);
});
