/**
 * Starts Slipway as a user runs it: `node dist/server/cli.js serve` on free ports with a fresh
 * data directory, plain HTTP on the registry host, warn-level logs. Reads the URLs and the
 * operator's one-time secrets from its output and creates the app `bench`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { collectLines, exitError, type Target } from './target.js';
import { slipwayOutput, type SlipwayUrls } from './slipway-output.js';
import { basicAuth } from '../client.js';
import { SERVER_NODE_FLAGS } from '../../server/runtime-flags.js';
import { removeDir, stopChild, trackChild, trackDir } from '../cleanup.js';

const CLI = fileURLToPath(new URL('../../server/cli.js', import.meta.url));

/** A running Slipway: the registry target plus its other hosts and the operator's secrets. */
export interface SlipwayTarget extends Target {
  urls: { registry: string; api: string; auth: string; upload: string };
  /** The operator account printed once at first start. */
  operator: { apiKey: string; email: string; password: string; totpSecret: string };
}

/**
 * Starts Slipway, creates the app `bench`, and returns the running target.
 * @param env extra environment for the server (e.g. rate-limit settings)
 */
export async function startSlipway(env: Record<string, string> = {}): Promise<SlipwayTarget> {
  if (!existsSync(CLI)) throw new Error(`${CLI} not found; build first (npx tsc -p .)`);
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
  trackDir(dataDir);
  // BENCH_SLIPWAY_NODE_ARGS: extra node flags for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = (process.env.BENCH_SLIPWAY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const proc = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...nodeArgs, CLI, 'serve', '--data', dataDir, '--registry-port', '0', '--api-port', '0', '--auth-port', '0', '--upload-port', '0', '--admin-port', '0'], {
    env: { ...process.env, SLIPWAY_LOG_LEVEL: 'warn', SLIPWAY_REGISTRY_TLS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(proc);
  const output = slipwayOutput();
  const secrets = output.secrets;
  let started = false;
  let onListening: (urls: SlipwayUrls) => void = () => {};
  const listening = new Promise<SlipwayUrls>((resolve) => { onListening = resolve; });
  const tail = collectLines(proc, (line) => {
    const urls = output.read(line);
    if (urls) onListening(urls);
    else if (started && line.trim()) process.stderr.write(`[slipway] ${line}\n`);
  });
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`slipway did not start within 30 s:\n${tail.join('\n')}`)), 30_000).unref());
  const urls = await Promise.race([listening, exitError(proc, 'slipway', () => tail.join('\n')), timeout]);
  started = true;
  const apiKey = secrets.api_key;
  if (!apiKey) throw new Error(`slipway gave no operator API key on a fresh data directory:\n${tail.join('\n')}`);
  const res = await request(`${urls.api}/apps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/vnd.slipway+json; version=3' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 201) throw new Error(`POST ${urls.api}/apps answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return {
    name: 'slipway',
    registry: urls.registry!,
    urls: { registry: urls.registry!, api: urls.api!, auth: urls.auth!, upload: urls.upload! },
    operator: { apiKey, email: secrets.email ?? '', password: secrets.password ?? '', totpSecret: secrets.totp_secret ?? '' },
    authorization: basicAuth('_', apiKey),
    pid: proc.pid!,
    version: 'slipway (dist/server/cli.js)',
    logTail: () => tail.slice(),
    stop: async () => {
      await stopChild(proc);
      removeDir(dataDir);
    },
  };
}
