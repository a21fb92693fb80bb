/**
 * The loopback set-up of docs/container-workflow.md, for tests: Slipway serving the registry and
 * the API under `registry.<domain>` and `api.<domain>` on port 443 (TLS, its self-signed
 * certificate), a hosts file mapping both names to a loopback address, a private Docker daemon
 * that resolves through that file, and the stock `heroku` CLI run with `HEROKU_HOST=<domain>` and
 * the documented environment. No code preload: the CLI derives every host from HEROKU_HOST as it
 * does against the platform.
 *
 * Isolation, so the machine is left as it is and test files run side by side: each set-up binds a
 * loopback address of its own (127.x.y.z, all of 127.0.0.0/8 is loopback on Linux), and the CLI
 * and dockerd see the hosts file as /etc/hosts in a mount namespace of their own (withHostsFile).
 * A user writes the same line into /etc/hosts instead. Needs root (port 443, namespaces, dockerd).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { startDocker, withHostsFile, type DockerDaemon } from './docker-daemon.js';
import { startSpawned, type SpawnedSlipway } from './harness.js';
import { HEROKU_BIN, type CliResult } from './platform-cli.js';

/** The environment that keeps the stock CLI from phoning home and from spawning `heroku update --autoupdate`. */
export const FAST_CLI_ENV = {
  DISABLE_TELEMETRY: 'true',
  HEROKU_SKIP_NEW_VERSION_CHECK: 'true',
  HEROKU_DISABLE_AUTOUPDATE: '1',
} as const;

/** A running set-up. */
export interface LoopbackPlatform {
  /** HEROKU_HOST: the API is `api.<domain>`, the registry `registry.<domain>`. */
  domain: string;
  /** `registry.<domain>`, what images are tagged with. */
  registry: string;
  /** The loopback address both names map to. */
  address: string;
  server: SpawnedSlipway;
  docker: DockerDaemon;
  /** The operator's API key (HEROKU_API_KEY). */
  key: string;
  /** The CLI user's HOME (kept across commands, as a user's is). */
  home: string;
  /** The CLI's environment: the documented variables, the docker client's, HOME. */
  env: Record<string, string>;
  /** Runs `heroku args` in `cwd` (default HOME); never rejects. */
  heroku(args: string[], opts?: { cwd?: string; env?: Record<string, string> }): Promise<CliResult & { ms: number }>;
  /** A Platform API request to https://api.<domain> with the operator's key; JSON in and out. */
  api(method: string, path: string, body?: unknown, accept?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; json: any; text: string }>;
}

/**
 * Starts the set-up, stopped at `t`'s teardown. `seed` picks the loopback address (printed).
 * @throws Error when Slipway or dockerd does not start.
 */
export async function startLoopbackPlatform(t: Test, seed: number): Promise<LoopbackPlatform> {
  const address = `127.${100 + (seed % 150)}.${(seed >>> 8) % 256}.${1 + ((seed >>> 16) % 250)}`;
  const domain = 'slipway.localhost';
  t.comment(`loopback address ${address} (seed ${seed})`);
  const dir = mkdtempSync(join(tmpdir(), 'slipway-loopback-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const hostsFile = join(dir, 'hosts');
  // What docs/container-workflow.md asks a user to add to /etc/hosts (with 127.0.0.1).
  writeFileSync(hostsFile, `127.0.0.1 localhost\n::1 localhost\n${address} api.${domain} registry.${domain}\n`);
  const docker = await startDocker({ hostsFile });
  t.teardown(() => docker.stop());
  const server = await startSpawned({
    listen: { host: address, 'registry-port': '443' },
    env: { SLIPWAY_API_URL: `https://api.${domain}`, SLIPWAY_REGISTRY_URL: `https://registry.${domain}` },
  });
  t.teardown(() => server.stop());
  const key = server.apiKey!;
  const ca = readFileSync(join(server.dataDir, 'keys', 'tls.crt'));
  const home = join(dir, 'home');
  const env: Record<string, string> = {
    ...docker.env,
    HOME: home,
    HEROKU_HOST: domain,
    HEROKU_API_KEY: key,
    // The CLI sends its token only to the platform's domains and to hosts named exactly
    // `localhost`/`127.0.0.1`, never to api.<domain>: HEROKU_HEADERS adds it to every API request.
    HEROKU_HEADERS: JSON.stringify({ Authorization: `Bearer ${key}` }),
    NODE_EXTRA_CA_CERTS: join(server.dataDir, 'keys', 'tls.crt'),
    HEROKU_PARTICLEBOARD_URL: `https://api.${domain}`,
    ...FAST_CLI_ENV,
    NO_COLOR: '1',
    COLUMNS: '200',
  };
  const heroku = (args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) =>
    new Promise<CliResult & { ms: number }>((resolve) => {
      const started = Date.now();
      const [cmd, argv] = withHostsFile(hostsFile, process.execPath, ['--no-deprecation', HEROKU_BIN, ...args]);
      execFile(cmd, argv, { cwd: opts.cwd ?? home, env: opts.env ?? env, maxBuffer: 16 << 20, timeout: 240_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout, stderr, all: stdout + stderr, ms: Date.now() - started });
      });
    });
  const api: LoopbackPlatform['api'] = (method, path, body, accept = 'application/vnd.heroku+json; version=3') =>
    new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = request({
        host: address, port: 443, servername: `api.${domain}`, ca, method, path, timeout: 30_000,
        headers: { host: `api.${domain}`, authorization: `Bearer ${key}`, accept, ...(data ? { 'content-type': 'application/json' } : {}) },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => { text += c; });
        res.on('end', () => {
          let json: unknown;
          try { json = JSON.parse(text); } catch { json = undefined; }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json, text });
        });
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path} took over 30 s`)));
      req.on('error', reject);
      req.end(data);
    });
  mkdirSync(home);
  return { domain, registry: `registry.${domain}`, address, server, docker, key, home, env, heroku, api };
}
