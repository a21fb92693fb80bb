/**
 * The registry host's self-signed certificate (server/http/tls.ts), made in a child process at a
 * first start: what it holds, and a generation that fails ends with a clear error in time instead
 * of a start that hangs or goes on without a certificate.
 */
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTlsFiles } from '../../server/http/tls.js';
import { tempDir } from '../helpers/server.js';

t.test('a first start makes an EC P-256 certificate for its names; a later one keeps it', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const made = await ensureTlsFiles(tmp.dir, '127.0.0.1', undefined, undefined, ['registry.example.test']);
  t.equal(made.generated, true);
  const cert = new X509Certificate(readFileSync(made.certFile));
  t.match(cert.subjectAltName ?? '', /DNS:localhost/);
  t.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
  t.match(cert.subjectAltName ?? '', /DNS:registry\.example\.test/);
  t.equal(cert.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  t.equal(statSync(made.keyFile).mode & 0o077, 0, 'the key is readable by its owner only');
  const again = await ensureTlsFiles(tmp.dir, '127.0.0.1');
  t.equal(again.generated, false);
  t.equal(readFileSync(again.certFile, 'utf8'), readFileSync(made.certFile, 'utf8'), 'the same certificate');
});

t.test('a generation that fails rejects with the cause, in time', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  // The key's path is taken by a directory: the child process cannot write it and exits 1.
  mkdirSync(join(tmp.dir, 'keys', 'tls.key'), { recursive: true });
  const t0 = Date.now();
  await t.rejects(ensureTlsFiles(tmp.dir, '127.0.0.1'), /generating the self-signed TLS certificate failed[\s\S]*EISDIR/);
  t.ok(Date.now() - t0 < 30_000, `answered in ${Date.now() - t0} ms (bound 30 s)`);
});
