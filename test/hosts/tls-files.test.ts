/**
 * The registry host's self-signed certificate (server/http/tls.ts), made in a child process at a
 * first start: what it holds, and a generation that fails ends with a clear error in time instead
 * of a start that hangs or goes on without a certificate.
 */
import t from 'tap';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
  // A data directory whose keys/ path leaves room for tls.key and tls.crt but not for the longer
  // names the child process writes first: its write fails with ENAMETOOLONG and it exits 1.
  const keysLength = 4080;
  let dataDir = tmp.dir;
  while (dataDir.length + '/keys'.length < keysLength) dataDir = join(dataDir, 'd'.repeat(Math.min(200, keysLength - '/keys'.length - dataDir.length - 1)));
  mkdirSync(dataDir, { recursive: true });
  const t0 = Date.now();
  await t.rejects(ensureTlsFiles(dataDir, '127.0.0.1'), /generating the self-signed TLS certificate failed[\s\S]*ENAMETOOLONG/);
  t.ok(Date.now() - t0 < 30_000, `answered in ${Date.now() - t0} ms (bound 30 s)`);
  t.notOk(existsSync(join(dataDir, 'keys', 'tls.key')) || existsSync(join(dataDir, 'keys', 'tls.crt')), 'no half pair left behind');
});

t.test('race: nodes sharing a data directory start together; all use one pair whose key matches its certificate', async (t) => {
  for (let round = 0; round < 3; round++) {
    const tmp = tempDir();
    t.teardown(() => tmp.cleanup());
    const starts = await Promise.all(Array.from({ length: 6 }, async () => {
      await sleep(Math.random() * 60);
      return ensureTlsFiles(tmp.dir, '127.0.0.1');
    }));
    t.equal(starts.filter((s) => s.generated).length, 1, `round ${round}: one start made the pair`);
    const cert = new X509Certificate(readFileSync(starts[0]!.certFile));
    t.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(starts[0]!.keyFile))), `round ${round}: the key matches the certificate`);
    t.ok(starts.every((s) => s.certFile === starts[0]!.certFile && s.keyFile === starts[0]!.keyFile), 'every start uses the same files');
    t.same(readdirSync(join(tmp.dir, 'keys')).sort(), ['tls.crt', 'tls.key'], 'no temporary files left');
  }
});

t.test('a key left alone by a start that stopped half way: the next start says what to delete, within its bound', { timeout: 90_000 }, async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  mkdirSync(join(tmp.dir, 'keys'), { recursive: true });
  writeFileSync(join(tmp.dir, 'keys', 'tls.key'), 'left by a start that stopped\n', { mode: 0o600 });
  const t0 = Date.now();
  await t.rejects(ensureTlsFiles(tmp.dir, '127.0.0.1'), /tls\.key exists without .*tls\.crt after 30 s[\s\S]*delete .*tls\.key/);
  const ms = Date.now() - t0;
  t.ok(ms >= 30_000 && ms < 40_000, `answered after ${ms} ms (bound: 30 s of waiting plus the generation)`);
  t.same(readdirSync(join(tmp.dir, 'keys')), ['tls.key'], 'nothing else left behind; the stray key untouched');
});
