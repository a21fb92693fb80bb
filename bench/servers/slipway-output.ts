/**
 * Reading a `slipway serve` process's output in the benchmarks: where it listens and, on a fresh
 * data directory, the operator's credentials. This build logs JSON lines (the credentials file's
 * path, then `"msg":"slipway listening"` with `urls`; docs/operator-guide.md); an older build
 * (bench/cluster-ab.ts runs two) printed the secrets and a plain `slipway listening …` line.
 */
import { readFileSync } from 'node:fs';

/** Each host's URL. */
export interface SlipwayUrls { registry: string; api: string; auth: string; upload: string; admin: string }

/** The operator's credentials (fields absent until seen). */
export interface SlipwaySecrets { api_key?: string; email?: string; password?: string; totp_secret?: string }

/**
 * A reader of output lines: `read(line)` records secrets it sees and returns the URLs when the
 * line is the listening line, else undefined.
 */
export function slipwayOutput(): { secrets: SlipwaySecrets; read(line: string): SlipwayUrls | undefined } {
  const secrets: SlipwaySecrets = {};
  return {
    secrets,
    read(line) {
      if (line.startsWith('{')) {
        let entry: { msg?: string; credentialsFile?: string; urls?: SlipwayUrls };
        try { entry = JSON.parse(line); } catch { return undefined; }
        if (entry.credentialsFile) Object.assign(secrets, JSON.parse(readFileSync(entry.credentialsFile, 'utf8')) as SlipwaySecrets);
        return entry.msg === 'slipway listening' ? entry.urls : undefined;
      }
      const secret = /^\s+(api_key|email|password|totp_secret)\s+(\S+)$/.exec(line);
      if (secret) secrets[secret[1] as keyof SlipwaySecrets] = secret[2]!;
      const m = /^slipway listening registry=(\S+) api=(\S+) auth=(\S+) upload=(\S+) admin=(\S+)/.exec(line);
      return m ? { registry: m[1]!, api: m[2]!, auth: m[3]!, upload: m[4]!, admin: m[5]! } : undefined;
    },
  };
}
