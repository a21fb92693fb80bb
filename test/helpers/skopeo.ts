/**
 * Runs skopeo. When it is not installed the interop tests are skipped with "skipped: skopeo not
 * installed", unless SLIPWAY_REQUIRE_SKOPEO=1 (set by CI), which makes that a failure.
 */
import { execFile, execFileSync } from 'node:child_process';

export function skopeoAvailable(): boolean {
  try {
    execFileSync('skopeo', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `skip` option for tap: false when skopeo is present; throws when CI requires it. */
export function skopeoSkip(): string | false {
  if (skopeoAvailable()) return false;
  if (process.env.SLIPWAY_REQUIRE_SKOPEO === '1') throw new Error('skopeo is required (SLIPWAY_REQUIRE_SKOPEO=1) but not installed');
  return 'skipped: skopeo not installed';
}

export interface SkopeoResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function skopeo(args: string[]): Promise<SkopeoResult> {
  return new Promise((resolve) => {
    execFile('skopeo', args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
