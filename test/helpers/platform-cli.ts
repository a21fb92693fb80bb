/**
 * Runs the platform's own CLI (`heroku`, the stock npm package pinned in devDependencies,
 * unmodified) against a Slipway API, each command with a fresh HOME, telemetry and update
 * checks off. (The container commands, which reach `registry.<HEROKU_HOST>`, run under host names
 * in test/container/cli-workflow.test.ts.)
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { startSpawned, type SpawnedSlipway } from './harness.js';
import { bearer, http, type Reply } from './http.js';
import { tempDir } from './server.js';

export const HEROKU_BIN = fileURLToPath(new URL('../../../node_modules/heroku/bin/run.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout and stderr together (the CLI reports progress, "done, v3", on stderr). */
  all: string;
}

export interface CliTarget {
  /** HEROKU_HOST: the API URL (the CLI sends its token only to heroku domains, `localhost` and `127.0.0.1`). */
  apiUrl: string;
  /** HEROKU_API_KEY. */
  token: string;
}

/**
 * The environment of one CLI run in `home`: XDG directories inside it, telemetry, update checks
 * and the delinquency look-up off or kept on loopback, no colours. HEROKU_API_KEY only when a
 * token is given.
 */
function cliEnv(home: string, target: { apiUrl: string; token?: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'), XDG_CACHE_HOME: join(home, '.cache'), XDG_DATA_HOME: join(home, '.local/share'),
    HEROKU_HOST: target.apiUrl,
    ...(target.token !== undefined ? { HEROKU_API_KEY: target.token } : {}),
    // Telemetry, update checks and the delinquency look-up off / kept on loopback.
    DISABLE_TELEMETRY: 'true',
    HEROKU_SKIP_NEW_VERSION_CHECK: 'true',
    // No detached `heroku update --autoupdate` (docs/container-workflow.md).
    HEROKU_DISABLE_AUTOUPDATE: '1',
    HEROKU_PARTICLEBOARD_URL: target.apiUrl,
    NO_COLOR: '1',
    COLUMNS: '200',
    ...extra,
  };
}

/**
 * Runs `heroku <args>` in a fresh HOME (or `opts.home`, kept afterwards) as working directory
 * (the CLI reads the app from the git remotes of its working directory) and resolves with its
 * exit code and output (never rejects). `target.token` '' or undefined: no HEROKU_API_KEY (the
 * CLI then reads ~/.netrc).
 * @param opts.prompts answers to interactive prompts, in order: each is typed (with a newline)
 *        once the output so far matches its pattern; stdin is closed after the last one
 */
export function heroku(target: Omit<CliTarget, 'token'> & { token?: string }, args: string[], opts: { env?: Record<string, string>; prompts?: Array<[RegExp, string]>; home?: string } = {}): Promise<CliResult> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), 'slipway-cli-home-'));
  const env = cliEnv(home, { ...target, token: target.token || undefined }, opts.env);
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--no-deprecation', HEROKU_BIN, ...args], { env, cwd: home, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
      if (!opts.home) rmSync(home, { recursive: true, force: true });
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr, all: stdout + stderr });
    });
    const prompts = [...(opts.prompts ?? [])];
    let seen = '';
    const answer = (d: Buffer) => {
      seen += d.toString();
      const next = prompts[0];
      if (next && next[0].test(seen)) {
        prompts.shift();
        seen = '';
        if (prompts.length > 0) child.stdin?.write(next[1] + '\n');
        else child.stdin?.end(next[1] + '\n');
      }
    };
    child.stdout?.on('data', answer);
    child.stderr?.on('data', answer);
    if (prompts.length === 0) child.stdin?.end();
  });
}

/** A running `heroku login` (the browser flow). */
export interface LoginRun {
  /** The URL the CLI printed ("Opening browser to …"). */
  url: Promise<string>;
  /** The exit code and output (a terminal merges stdout and stderr). */
  done: Promise<CliResult>;
  /** URLs the CLI handed to its browser (the `--browser` recorder), read now. */
  opened(): string[];
}

const shellQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/**
 * Starts the stock `heroku login` (browser flow) with HEROKU_LOGIN_HOST = `loginUrl` and no
 * HEROKU_API_KEY, in `home` (kept: ~/.netrc is what the login writes). The CLI reads its "press
 * any key" from a raw-mode terminal, so it runs under util-linux `script` (a pseudo-terminal);
 * the key is typed when the prompt shows. Its browser is `--browser <recorder>`, the CLI's own
 * option: a two-line shell script that records the URL instead of opening a window (the test
 * drives Chromium itself). TERM=dumb keeps oclif's spinner out of the output.
 */
export function herokuLogin(apiUrl: string, loginUrl: string, home: string): LoginRun {
  const recorder = join(home, 'record-browser.sh');
  const opened = join(home, 'opened-urls');
  writeFileSync(recorder, `#!/bin/sh\nprintf '%s\\n' "$1" >> ${shellQuote(opened)}\n`, { mode: 0o755 });
  const env = cliEnv(home, { apiUrl }, { HEROKU_LOGIN_HOST: loginUrl, TERM: 'dumb' });
  const command = [process.execPath, '--no-deprecation', HEROKU_BIN, 'login', '--browser', recorder].map(shellQuote).join(' ');
  const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], { env, cwd: home, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let pressed = false;
  let foundUrl: (u: string) => void = () => {};
  let failUrl: (e: Error) => void = () => {};
  const url = new Promise<string>((resolve, reject) => { foundUrl = resolve; failUrl = reject; });
  url.catch(() => {});
  const onData = (d: Buffer) => {
    out += d.toString();
    if (!pressed && /Press any key/.test(out)) {
      pressed = true;
      child.stdin.write('x');
    }
    const m = /Opening browser to (\S+)/.exec(out);
    if (m) foundUrl(m[1]!);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
  const done = new Promise<CliResult>((resolve) => {
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      child.stdin.destroy();
      failUrl(new Error(`heroku login printed no URL:\n${out}`));
      const all = out.replaceAll('\r\n', '\n');
      resolve({ code: code ?? (signal ? 128 : 1), stdout: all, stderr: '', all });
    });
  });
  return {
    url, done,
    opened: () => {
      try {
        return readFileSync(opened, 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    },
  };
}

/** A `slipway serve` for CLI tests and what the tests use with it (startCliServer). */
export interface CliFixture {
  server: SpawnedSlipway;
  /** The server's data directory (removed at teardown). */
  dataDir: string;
  /** The operator's API key, HEROKU_API_KEY of `ok`. */
  key: string;
  target: CliTarget;
  /** A Platform API request with the operator's key; JSON body. */
  api(method: string, path: string, body?: unknown): Promise<Reply>;
  /** Runs `heroku <args>` (as the operator, or with `opts.token`), asserting exit 0; returns its output. */
  ok(t: Test, args: string[], opts?: { token?: string }): Promise<CliResult>;
}

/** Starts a spawned server for the CLI, stopped at `t`'s teardown; `env`: SLIPWAY_* settings for it. */
export async function startCliServer(t: Test, env: Record<string, string> = {}): Promise<CliFixture> {
  const tmp = tempDir();
  const server = await startSpawned({ dataDir: tmp.dir, env });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const key = server.apiKey!;
  const target: CliTarget = { apiUrl: server.urls.api, token: key };
  return {
    server, dataDir: tmp.dir, key, target,
    api: (method, path, body) => http(method, server.urls.api + path, { headers: { ...bearer(key), 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }),
    async ok(t, args, opts = {}) {
      const r = await heroku({ ...target, token: opts.token ?? key }, args);
      t.equal(r.code, 0, `heroku ${args.join(' ')} exits 0${r.code === 0 ? '' : ':\n' + r.all}`);
      return r;
    },
  };
}
