/**
 * Process plumbing for tests: temporary data directories and the `slipway` command line.
 * Starting a server is test/helpers/harness.ts.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../server/cli.js', import.meta.url));

/** A new temporary data directory, removed by `cleanup`. */
export function tempDir(prefix = 'slipway-test-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs one `slipway` command (not `serve`) to its end; resolves with its exit code and output. The child inherits this process's environment unless `inheritEnv` is false. */
export function runCli(args: string[], env: Record<string, string> = {}, opts: { inheritEnv?: boolean } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const base = opts.inheritEnv === false ? {} : process.env;
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...base, SLIPWAY_LOG_LEVEL: 'warn', ...env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
