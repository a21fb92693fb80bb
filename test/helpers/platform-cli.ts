/**
 * Runs the platform's own CLI (`heroku`, the stock npm package pinned in devDependencies,
 * unmodified) against a Slipway API, each command with a fresh HOME, telemetry and update
 * checks off. The only aid: test/helpers/redirect-host.ts maps the registry host name the CLI
 * derives from HEROKU_HOST (`registry.<HEROKU_HOST>`) to the registry's loopback address.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HEROKU_BIN = fileURLToPath(new URL('../../../node_modules/heroku/bin/run.js', import.meta.url));
const PRELOAD = fileURLToPath(new URL('./redirect-host.js', import.meta.url));

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
  /** host:port of the registry, where connections to `registry.<HEROKU_HOST>` go. */
  registry?: string;
}

/**
 * Runs `heroku <args>` in the fresh HOME as working directory (the CLI reads the app from the git
 * remotes of its working directory) and resolves with its exit code and output (never rejects).
 * @param opts.prompts answers to interactive prompts, in order: each is typed (with a newline)
 *        once the output so far matches its pattern; stdin is closed after the last one
 */
export function heroku(target: CliTarget, args: string[], opts: { env?: Record<string, string>; prompts?: Array<[RegExp, string]> } = {}): Promise<CliResult> {
  const home = mkdtempSync(join(tmpdir(), 'slipway-cli-home-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'), XDG_CACHE_HOME: join(home, '.cache'), XDG_DATA_HOME: join(home, '.local/share'),
    HEROKU_HOST: target.apiUrl,
    HEROKU_API_KEY: target.token,
    // Telemetry, update checks and the delinquency look-up off / kept on loopback.
    DISABLE_TELEMETRY: 'true',
    HEROKU_SKIP_NEW_VERSION_CHECK: 'true',
    HEROKU_PARTICLEBOARD_URL: target.apiUrl,
    NO_COLOR: '1',
    COLUMNS: '200',
    ...(target.registry ? { SLIPWAY_REDIRECT_HOST: `registry.${target.apiUrl}`, SLIPWAY_REDIRECT_TO: target.registry } : {}),
    ...opts.env,
  };
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--no-deprecation', '--import', PRELOAD, HEROKU_BIN, ...args], { env, cwd: home, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
      rmSync(home, { recursive: true, force: true });
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
