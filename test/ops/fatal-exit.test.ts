/**
 * A node that meets an error nothing handles ends with exit code 1, as Node's default does, but
 * says why first: one JSON log line at `fatal` (level 60) naming the error and its origin, so an
 * operator's log pipeline sees why a node ended. The fault is injected into the real `slipway
 * serve` process by a module preloaded with Node's `--import` (no hook in the server): on
 * SIGUSR2 it throws from a signal handler, or rejects a promise nobody awaits.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tempDir } from '../helpers/server.js';
import { logLine, startSpawned } from '../helpers/harness.js';
import { http } from '../helpers/http.js';

const FAULTS = {
  uncaughtException: "throw new Error('injected fault: thrown where nothing catches it')",
  unhandledRejection: "void Promise.reject(new Error('injected fault: rejected where nothing handles it'))",
} as const;

for (const [origin, fault] of Object.entries(FAULTS)) {
  t.test(`${origin}: exit 1 after a fatal log line that names it`, async (t) => {
    const tmp = tempDir();
    t.teardown(() => tmp.cleanup());
    const preload = join(tmp.dir, 'fault.mjs');
    writeFileSync(preload, `process.on('SIGUSR2', () => { ${fault}; });\n`);
    const server = await startSpawned({ env: { NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` } });
    t.teardown(() => server.stop());
    t.equal((await http('GET', `${server.urls.admin}/healthz`)).status, 200, 'serving before the fault');

    server.proc.kill('SIGUSR2');
    t.equal(await server.exited, 1, 'exit code 1');
    const fatal = server.output().split('\n').map(logLine).filter((l) => l?.level === 60);
    t.equal(fatal.length, 1, 'one fatal line');
    t.match(fatal[0], { origin, msg: /^slipway stopped: .*injected fault/, err: { message: /injected fault/, stack: /Error: injected fault/ } });
  });
}
