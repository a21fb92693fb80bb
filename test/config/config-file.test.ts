/**
 * The config file, through the real `slipway` command line as a child process: a YAML and a TOML
 * file start a server that listens where the file says (checked by connecting to the ports); the
 * environment wins over the file and a flag over the environment; unknown keys, bad values and
 * inline secrets are refused with the key's path (by `serve` and `config check`, with their exit
 * codes); `config print` shows no secret; `--help` lists every setting of the schema; `key
 * generate` writes a 0600 key file and never overwrites one.
 */
import t from 'tap';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { tempDir } from '../helpers/server.js';
import { cli, get, ports, ready, serve } from '../helpers/config-cli.js';
import { SETTINGS, flagOf } from '../../server/settings/schema.js';

t.test('a YAML file starts the server on its ports, with paths relative to the file', async (t) => {
  const dir = tempDir('slipway-config-');
  t.teardown(dir.cleanup);
  const [registry, api, auth, upload, admin] = await ports(5);
  const file = join(dir.dir, 'slipway.yaml');
  writeFileSync(file, [
    '# a node of the test',
    'data: ./node-data',
    'registry:',
    `  port: ${registry}`,
    '  tls: off',
    `api: { port: ${api}, vendor: acme }`,
    `auth: { port: ${auth} }`,
    `upload: { port: ${upload} }`,
    'admin:',
    `  port: ${admin}`,
    'log: { level: warn }',
  ].join('\n'));
  const s = serve(t, ['--config', file], {});
  await ready(s, admin!);
  const v2 = await get(registry!, '/v2/');
  t.match(v2, { status: 401, headers: { 'docker-distribution-api-version': 'registry/2.0' } }, 'the registry answers on registry.port, over plain HTTP (registry.tls: off)');
  t.match(await get(api!, '/apps'), { status: Number }, 'the Platform API answers on api.port');
  t.match(await get(auth!, '/'), { status: Number }, 'the OAuth host answers on auth.port');
  t.match(await get(upload!, '/'), { status: Number }, 'the upload host answers on upload.port');
  t.ok(existsSync(join(dir.dir, 'node-data', 'lmdb')), 'data: ./node-data is relative to the file\'s directory');
});

t.test('TOML: the environment wins over the file, a flag over the environment', async (t) => {
  const dir = tempDir('slipway-config-');
  t.teardown(dir.cleanup);
  const [fileRegistry, envRegistry, fileApi, envApi, flagApi, auth, upload, admin] = await ports(8);
  const file = join(dir.dir, 'node.toml');
  writeFileSync(file, [
    `data = "${join(dir.dir, 'data')}"`,
    '[registry]',
    `port = ${fileRegistry}`,
    'tls = false',
    '[api]',
    `port = ${fileApi}`,
    '[auth]',
    `port = ${auth}`,
    '[upload]',
    `port = ${upload}`,
    '[admin]',
    `port = ${admin}`,
  ].join('\n'));
  const s = serve(t, ['--api-port', String(flagApi)], { SLIPWAY_CONFIG: file, SLIPWAY_REGISTRY_PORT: String(envRegistry), SLIPWAY_API_PORT: String(envApi) });
  await ready(s, admin!);
  t.match(await get(envRegistry!, '/v2/'), { status: 401 }, 'registry on SLIPWAY_REGISTRY_PORT, not registry.port of the file');
  t.match(await get(fileRegistry!, '/v2/'), { error: 'ECONNREFUSED' }, 'nothing on the file\'s registry.port');
  t.match(await get(flagApi!, '/apps'), { status: Number }, 'API on --api-port');
  t.match(await get(envApi!, '/apps'), { error: 'ECONNREFUSED' }, 'nothing on SLIPWAY_API_PORT');
  t.match(await get(fileApi!, '/apps'), { error: 'ECONNREFUSED' }, 'nothing on the file\'s api.port');
  t.match(await get(upload!, '/'), { status: Number }, 'upload host on the file\'s upload.port (no override)');
});

t.test('bad files are refused with the key\'s path: serve and config check exit non-zero', async (t) => {
  const dir = tempDir('slipway-config-');
  t.teardown(dir.cleanup);
  const write = (name: string, text: string) => {
    const f = join(dir.dir, name);
    writeFileSync(f, text);
    return f;
  };
  // Every problem of a file is reported at once, so one file carries several.
  const many = write('many.yaml', [
    'regsitry_port: 5000',
    'registry:',
    '  prot: 5000',
    'api: { port: x }',
    'upload: { tls: maybe }',
    'auth: 5002',
    'server_key:',
    '  value: AAAA',
    'database:',
    '  url: postgres://slipway:hunter2@db/slipway',
  ].join('\n'));
  const cases: Array<[string, RegExp[]]> = [
    [many, [
      /slipway: 7 problems in the settings:\n/,
      /: regsitry_port: unknown setting \(known: data, host, .*\)/,
      /: registry\.prot: unknown setting \(known in registry: port, url, tls\)/,
      /: api\.port: expected an integer 0-65535, got "x"/,
      /: upload\.tls: expected on or off, got "maybe"/,
      /: auth: expected a table of settings \(port, url, cli_login_poll_wait, cli_logins_per_source\), got 5002/,
      /: server_key\.value: a secret is not taken from a config file; give it in the environment \(SLIPWAY_SERVER_KEY\) or as a file \(server_key\.file\)/,
      /: database\.url: holds a password; a config file must not/,
    ]],
    [write('bad.toml', '[registry]\nport = 70000\n[gc]\ngrace = "soon"\n'), [/: registry\.port: expected an integer 0-65535, got 70000/, /: gc\.grace: expected a number of seconds, 0 or more \(decimals allowed\), got "soon"/]],
    [write('duplicate.yaml', 'registry:\n  port: 1\n  port: 2\n'), [/YAML syntax error at line 3/]],
    [write('syntax.toml', '[registry\nport = 1\n'), [/TOML syntax error/]],
    [write('config.json', '{}'), [/name it \*\.yaml, \*\.yml \(YAML\) or \*\.toml \(TOML\)/]],
  ];
  for (const [f, messages] of cases) {
    const check = await cli(['config', 'check', '--config', f]);
    t.equal(check.code, 1, `${f}: config check exits 1`);
    for (const m of messages) t.match(check.stderr, m, `${f}: ${m}`);
    t.match(check.stderr, f, `${f}: names the file`);
    t.notMatch(check.stderr + check.stdout, /hunter2/, `${f}: never the password`);
  }
  const s = await cli(['serve', '--config', many]);
  t.equal(s.code, 1, 'serve refuses to start on a bad file');
  t.match(s.stderr, /api\.port: expected an integer 0-65535, got "x"/);
  const missing = await cli(['config', 'check', '--config', join(dir.dir, 'absent.yaml')]);
  t.match(missing, { code: 1, stderr: /absent\.yaml: cannot be read \(ENOENT\)/ }, 'a missing file');
  const env = await cli(['config', 'check'], { SLIPWAY_REGISTRY_PORT: 'x' });
  t.match(env, { code: 1, stderr: /environment variable SLIPWAY_REGISTRY_PORT: expected an integer 0-65535, got "x"/ }, 'a bad environment variable, same words');
});

t.test('config check summarises a good file; config print shows sources and no secret', async (t) => {
  const dir = tempDir('slipway-config-');
  t.teardown(dir.cleanup);
  const password = randomBytes(12).toString('hex');
  const serverKey = randomBytes(32).toString('base64');
  writeFileSync(join(dir.dir, 'db-password'), `${password}\n`);
  const file = join(dir.dir, 'cluster.yml');
  writeFileSync(file, [
    'data: /var/lib/slipway',
    'node_name: node-1',
    'registry: { port: 5443, url: "https://registry.example.com/" }',
    'database:',
    '  url: postgres://slipway@db.internal:5432/slipway',
    '  password_file: db-password',
    '  pool: 20',
    'api: { accept_vendors: [heroku, acme] }',
  ].join('\n'));
  const check = await cli(['config', 'check', '--config', file], { SLIPWAY_SERVER_KEY: serverKey, SLIPWAY_DATABASE_CACHE: 'off', SLIPWAY_REGISTY_PORT: '1' });
  t.equal(check.code, 0, `exit 0 (${check.stderr})`);
  t.match(check.stdout, new RegExp(`Config file ${file}: good\\. Settings given: 8 in the file, 3 in the environment, 0 as flags`));
  t.match(check.stdout, /registry https:\/\/127\.0\.0\.1:5443/);
  t.match(check.stdout, /Metadata: PostgreSQL postgres:\/\/slipway:\*\*\*@db\.internal:5432\/slipway \(pool 20\)/, 'the password file is read; the password shown as ***');
  t.match(check.stdout, /Server key: environment variable SLIPWAY_SERVER_KEY\./);
  t.match(check.stdout, /Not settings \(unused\): [^\n]*\bSLIPWAY_REGISTY_PORT\b/, 'a misspelt variable is named');
  const print = await cli(['config', 'print', '--config', file], { SLIPWAY_SERVER_KEY: serverKey });
  t.equal(print.code, 0);
  t.match(print.stdout, /^registry\.port +\= 5443 {2}# config file .*cluster\.yml: registry\.port$/m);
  t.match(print.stdout, /^api\.accept_vendors += heroku,acme /m);
  t.match(print.stdout, /^server_key\.value += \(set; not shown\) {2}# environment variable SLIPWAY_SERVER_KEY$/m);
  t.match(print.stdout, /^upload\.port += 5003 {2}# default$/m);
  t.match(print.stdout, new RegExp(`^database\\.password_file += ${join(dir.dir, 'db-password')} `, 'm'), 'relative to the file');
  const json = await cli(['config', 'print', '--json', '--config', file], { SLIPWAY_SERVER_KEY: serverKey });
  t.match(JSON.parse(json.stdout), { 'registry.url': { value: 'https://registry.example.com' }, 'data': { value: '/var/lib/slipway' } });
  for (const out of [check.stdout + check.stderr, print.stdout + print.stderr, json.stdout]) {
    t.notOk(out.includes(password), 'never the database password');
    t.notOk(out.includes(serverKey), 'never the server key');
  }
});

t.test('--help lists every setting of the schema, with its flag, variable and key', async (t) => {
  const help = await cli(['--help']);
  t.equal(help.code, 0);
  for (const flag of ['--database-url', '--node-name', '--admin-port', '--key-file', '--config']) t.match(help.stdout, flag, flag);
  for (const s of SETTINGS) {
    const flag = flagOf(s);
    t.ok(help.stdout.includes(flag === undefined ? `${s.env} (environment only)` : `--${flag} ${s.kind.placeholder}  (${s.env}, ${s.path})`), s.path);
  }
  const old = await cli(['config', 'print', '--upload-memory-mi-b', '300', '--gc-grace-seconds', '5']);
  t.match(old.stdout, /^upload\.memory += 300 {2}# flag --upload-memory-mi-b$/m, 'flag spellings of earlier releases still work');
  t.match(old.stdout, /^gc\.grace += 5 {2}# flag --gc-grace-seconds$/m);
});

t.test('key generate writes a 0600 key file, never prints the key, never overwrites', async (t) => {
  const dir = tempDir('slipway-config-');
  t.teardown(dir.cleanup);
  const keyFile = join(dir.dir, 'secrets', 'server.key');
  const file = join(dir.dir, 'node.yaml');
  writeFileSync(file, `server_key:\n  file: secrets/server.key\n`);
  const first = await cli(['key', 'generate', '--config', file]);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, new RegExp(`Server key written to ${keyFile} \\(mode 0600; fingerprint [A-Za-z0-9_-]{12}\\)`));
  const key = readFileSync(keyFile);
  t.equal(key.length, 32, '32 bytes');
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'mode 0600');
  t.notOk(first.stdout.includes(key.toString('base64')) || first.stdout.includes(key.toString('base64url')), 'the key is not printed');
  const again = await cli(['key', 'generate', '--key-file', keyFile]);
  t.equal(again.code, 1, 'a second run is refused');
  t.match(again.stderr, /exists; a server key is never overwritten/);
  t.same(readFileSync(keyFile), key, 'the file is unchanged');
});
