/**
 * TLS material for the registry host. Why TLS by default: clients told to skip verification
 * (`--tls-verify=false`, docker's insecure registries, which include 127.0.0.0/8) probe HTTPS
 * first, and the uWebSockets.js build we can install holds a non-HTTP connection open until
 * its 10-second idle timeout. Over plain HTTP every docker or skopeo command would stall 10 s
 * (measured: 10.7 s); over TLS the probe succeeds at once. docs/operator-guide.md "TLS on the registry host" has the details.
 *
 * Without a configured certificate, a self-signed one (EC P-256, SANs for the listen host,
 * localhost, 127.0.0.1, ::1 and the host names of the public registry and API URLs) is generated
 * once with the `selfsigned` library, in a child process, and kept in `<data>/keys/tls.crt` and
 * `tls.key` (mode 0600).
 */
import { existsSync, linkSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

type GenerateArgs = Parameters<typeof import('selfsigned').generate>;

/** How long the certificate's child process may take, milliseconds (it takes ~0.3 s here). */
const GENERATE_TIMEOUT_MS = 30_000;

/**
 * Writes `keyFile` and `certFile` from selfsigned's `generate(attrs, options)`, run in a child
 * process (tls-generate.ts says why).
 * @throws Error with the child's stderr when it fails or takes more than 30 s.
 */
function generateInChild(attrs: GenerateArgs[0], options: GenerateArgs[1], keyFile: string, certFile: string): Promise<void> {
  const script = fileURLToPath(new URL('./tls-generate.js', import.meta.url));
  const job = JSON.stringify({ attrs, options, keyFile, certFile });
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, job], { timeout: GENERATE_TIMEOUT_MS }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`generating the self-signed TLS certificate failed: ${err.message}\n${stderr}`));
      else resolve();
    });
  });
}

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** True when this call generated a new self-signed certificate. */
  generated: boolean;
}

/**
 * The configured files, or the self-signed pair in `<dataDir>/keys`, created when missing (with
 * `names`, host names or IP addresses, among its SANs; an existing pair is kept as it is).
 * @throws Error when only one of `cert` and `key` is set, or a configured file does not exist.
 */
export async function ensureTlsFiles(dataDir: string, host: string, cert?: string, key?: string, names: string[] = []): Promise<TlsFiles> {
  if (cert || key) {
    if (!cert || !key) throw new Error('SLIPWAY_TLS_CERT and SLIPWAY_TLS_KEY must be set together');
    for (const f of [cert, key]) if (!existsSync(f)) throw new Error(`TLS file ${f} does not exist`);
    return { certFile: cert, keyFile: key, generated: false };
  }
  const dir = join(dataDir, 'keys');
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile, generated: false };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const sans = new Set(['localhost', '127.0.0.1', '::1', host, ...names.map((n) => n.replace(/^\[(.*)\]$/, '$1'))]);
  const altNames = [...sans].filter((n) => n !== '0.0.0.0' && n !== '::').map((n) => (isIP(n) ? { type: 7 as const, ip: n } : { type: 2 as const, value: n }));
  // Written under names of this call's own, then claimed: the first call to link its key in as
  // `tls.key` wins and moves its certificate in beside it; the others (nodes sharing the data
  // directory, started together) drop theirs and use the winner's pair once both are in place.
  // Each call writing the two files in place could leave one node's key beside another's
  // certificate ("key values mismatch" at listen).
  const tmp = join(dir, `.tls-${process.pid}-${randomBytes(6).toString('hex')}`);
  const tmpKey = `${tmp}.key`;
  const tmpCert = `${tmp}.crt`;
  try {
    await generateInChild(subject(host), certificateOptions(altNames), tmpKey, tmpCert);
    try {
      linkSync(tmpKey, keyFile);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      await waitForPair(certFile, keyFile);
      return { certFile, keyFile, generated: false };
    }
    renameSync(tmpCert, certFile);
    return { certFile, keyFile, generated: true };
  } finally {
    // What is left of this call's own files; a failure here must not hide the call's outcome.
    for (const f of [tmpKey, tmpCert]) try { rmSync(f, { force: true }); } catch { /* left for the operator; named .tls-* */ }
  }
}

/** The certificate's subject: the listen host, or localhost for a wildcard address. */
function subject(host: string): GenerateArgs[0] {
  return [{ name: 'commonName', value: host === '0.0.0.0' ? 'localhost' : host }];
}

/** selfsigned's options: EC P-256, SHA-256, three years, a server certificate for `altNames`. */
function certificateOptions(altNames: Array<{ type: 7; ip: string } | { type: 2; value: string }>): GenerateArgs[1] {
  return {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 3 * 365 * 24 * 3600_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  } as GenerateArgs[1];
}

/**
 * Waits for another process's pair: its key is in place, its certificate follows at once.
 * @throws Error after GENERATE_TIMEOUT_MS without the certificate (a process that stopped between
 *         the two steps left the key alone: deleting it lets the next start make a new pair).
 */
async function waitForPair(certFile: string, keyFile: string): Promise<void> {
  const deadline = Date.now() + GENERATE_TIMEOUT_MS;
  while (!existsSync(certFile)) {
    if (Date.now() > deadline) throw new Error(`${keyFile} exists without ${certFile} after ${GENERATE_TIMEOUT_MS / 1000} s: a start that generated the pair stopped half way; delete ${keyFile} and start again`);
    await sleep(20);
  }
}
