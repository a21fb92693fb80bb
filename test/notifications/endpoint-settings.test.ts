/**
 * The `notifications.endpoints` setting through the real `slipway config` commands: a YAML file
 * written as distribution's `notifications.endpoints` (headers as lists, Go durations,
 * `ignore.actions`) loads, a header value can come from a file, and the same list is taken as JSON
 * from SLIPWAY_NOTIFICATIONS_ENDPOINTS; bad endpoints are refused naming the endpoint and key;
 * neither `config print`, `config check` nor an error ever shows a header value.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { cli } from '../helpers/config-cli.js';
import { loadConfig } from '../../server/config.js';
import { ConfigError } from '../../server/settings/load.js';

const TOKEN = 'Bearer s3cr3t-notification-token';
const FILE_TOKEN = 'file-held-s3cr3t';

t.test('a distribution-style endpoint list loads; header values never show', async (t) => {
  const dir = tempDir('slipway-notify-');
  t.teardown(dir.cleanup);
  writeFileSync(join(dir.dir, 'token'), `${FILE_TOKEN}\n`);
  const file = join(dir.dir, 'node.yaml');
  writeFileSync(file, [
    `data: ${join(dir.dir, 'data')}`,
    'notifications:',
    '  endpoints:',
    '    - name: alistener',
    '      url: https://listener.example.com/event',
    '      headers:',
    `        Authorization: [${TOKEN}]`,
    '        X-Token: { file: ./token }',
    '      timeout: 500ms',
    '      threshold: 5',
    '      backoff: 1s',
    '      ignoredmediatypes: [application/octet-stream]',
    '      ignore: { actions: [pull] }',
    '    - name: off',
    '      disabled: true',
    '      url: https://off.example.com/',
  ].join('\n'));
  const check = await cli(['config', 'check', '--config', file]);
  t.equal(check.code, 0, check.stderr);
  t.match(check.stdout, 'Registry notifications: alistener → https://listener.example.com/event.', 'the disabled endpoint is left out');
  const print = await cli(['config', 'print', '--json', '--config', file]);
  t.equal(print.code, 0, print.stderr);
  const shown = JSON.parse(print.stdout)['notifications.endpoints'];
  t.match(shown.value, /alistener → https:\/\/listener\.example\.com\/event \(headers Authorization, X-Token: values not shown\)/);
  for (const out of [check.stdout, check.stderr, print.stdout, print.stderr]) {
    t.notMatch(out, /s3cr3t/, 'no header value in the output');
  }
});

t.test('the environment takes the list as JSON', async (t) => {
  const endpoints = JSON.stringify([{ name: 'hooks', url: 'http://127.0.0.1:9/x', headers: { Authorization: TOKEN }, timeout: 2 }]);
  const check = await cli(['config', 'check'], { SLIPWAY_NOTIFICATIONS_ENDPOINTS: endpoints });
  t.equal(check.code, 0, check.stderr);
  t.match(check.stdout, 'Registry notifications: hooks → http://127.0.0.1:9/x.');
  t.notMatch(check.stdout + check.stderr, /s3cr3t/);
});

t.test('bad endpoints are refused naming the endpoint and key, never a header value', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [[{ name: 'a', url: 'ftp://x/' }], /endpoint "a": url: expected an http or https URL/],
    [[{ name: 'a', url: 'https://user:s3cr3t@x/' }], /endpoint "a": url: expected an http or https URL without credentials/],
    [[{ url: 'https://x/' }], /endpoint 1: name: expected/],
    [[{ name: 'a', url: 'https://x/', timeout: 'soon', headers: { Authorization: TOKEN } }], /endpoint "a": timeout: expected a duration/],
    [[{ name: 'a', url: 'https://x/', headers: { Authorization: `${TOKEN}\r\nX: y` } }], /endpoint "a": headers\.Authorization: a header value holds a character other than visible ASCII/],
    [[{ name: 'a', url: 'https://x/', headers: { 'Content-Type': 'text/plain' } }], /Content-Type is set by Slipway/],
    [[{ name: 'a', url: 'https://x/', ignore: { actions: ['fetch'] } }], /ignore\.actions: "fetch" is not one of push, pull, delete, mount/],
    [[{ name: 'a', url: 'https://x/', retries: 3 }], /endpoint "a": unknown key "retries"/],
    [[{ name: 'a', url: 'https://x/' }, { name: 'a', url: 'https://y/' }], /names endpoint "a" twice/],
    ['[{', /is not JSON/],
  ];
  // The loader `serve` and `config check` run (the CLI's exit code for a ConfigError is
  // config-file.test.ts's); one child process for the first case only, the rest in process.
  const first = await cli(['config', 'check'], { SLIPWAY_NOTIFICATIONS_ENDPOINTS: JSON.stringify(cases[0]![0]) });
  t.equal(first.code, 1, 'config check exits 1');
  t.match(first.stderr, cases[0]![1]);
  for (const [value, expected] of cases) {
    const raw = typeof value === 'string' ? value : JSON.stringify(value);
    const e = (() => {
      try {
        loadConfig({ SLIPWAY_NOTIFICATIONS_ENDPOINTS: raw });
      } catch (err) {
        return err as Error;
      }
      return undefined;
    })();
    t.ok(e instanceof ConfigError, `${raw}: refused`);
    t.match(e?.message, /environment variable SLIPWAY_NOTIFICATIONS_ENDPOINTS: expected a list of endpoints/);
    t.match(e?.message, expected, raw);
    t.notMatch(e?.message, /s3cr3t/, 'no secret in the message');
  }
});
