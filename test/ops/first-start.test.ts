/**
 * The operator account at first start, as an operator meets it (`slipway serve` and the
 * operator commands as child processes, a port held by another program, a real terminal through
 * util-linux `script`):
 *   - a first start that fails to bind (EADDRINUSE) creates nothing, and says why in a JSON line;
 *   - the next start creates the operator and writes its credentials to a 0600 file in the data
 *     directory, names the file in a JSON log line and never prints a secret; they work (API key
 *     on the API host, password and second factor on the sign-in form);
 *   - a start whose delivery fails (the file cannot be written) leaves the bootstrap unfinished,
 *     and the next start completes it;
 *   - `slipway operator reset-credentials` issues new ones (the old API key stops working on the
 *     running server), writes the file, prints only its path when piped and the secrets on a
 *     terminal.
 */
import t, { type Test } from 'tap';
import net from 'node:net';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, runCli, CLI } from '../helpers/server.js';
import { logLine, readCredentials, startSpawned, type Operator } from '../helpers/harness.js';
import { http, type Reply } from '../helpers/http.js';
import { Browser, findForm, V3 } from '../helpers/oauth.js';
import { totpCode } from '../../engine/identity/totp.js';

const FILE = 'operator-credentials.json';
const PORT_FLAGS = ['--host', '127.0.0.1', '--api-port', '0', '--auth-port', '0', '--upload-port', '0', '--admin-port', '0'];

const account = (api: string, key: string): Promise<Reply> => http('GET', `${api}/account`, { headers: { accept: V3, authorization: `Bearer ${key}` } });

/** Signs in on the auth host's form with the password and the current second-factor code: the status (303 = signed in). */
async function signIn(auth: string, op: Operator): Promise<number> {
  const browser = new Browser(auth);
  const page = await browser.get('/login');
  const form = findForm(page.text, '/login');
  return (await browser.post(form.action, { ...form.fields, email: op.email, password: op.password, code: totpCode(op.totpSecret, Date.now()) })).status;
}

/** Fails `t` for every stdout line that is not a JSON log line and for every secret of `op` found in `out`. */
function checkOutput(t: Test, stdout: string, out: string, op?: Operator): void {
  const lines = stdout.split('\n').filter((l) => l !== '');
  t.ok(lines.length > 0, 'the server printed something');
  t.same(lines.filter((l) => logLine(l) === undefined), [], 'every line on stdout is a JSON log line');
  if (op) for (const [k, v] of Object.entries(op)) if (k !== 'email') t.notOk(out.includes(v), `the ${k} appears nowhere in the output`);
}

const stdoutOf = (output: string) => output.split('\n').filter((l) => l.startsWith('{')).join('\n');

t.test('a first start that cannot bind creates nothing; the next start creates the operator and writes the file', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => blocker.close());
  const busy = (blocker.address() as net.AddressInfo).port;

  const failed = await runCli(['serve', '--data', tmp.dir, '--registry-port', String(busy), ...PORT_FLAGS]);
  t.equal(failed.code, 1, 'the start fails');
  checkOutput(t, failed.stdout, failed.stdout + failed.stderr);
  const fatal = failed.stdout.split('\n').map(logLine).find((l) => l?.level === 60);
  t.match(fatal?.msg, /did not start: .*EADDRINUSE/, 'a fatal JSON line says why');
  t.notOk(existsSync(join(tmp.dir, FILE)), 'no credentials file');
  const none = await runCli(['operator', 'reset-credentials', '--data', tmp.dir]);
  t.equal(none.code, 1);
  t.match(none.stderr, /no operator account/, 'no operator account was created by the failed start');

  const server = await startSpawned({ dataDir: tmp.dir });
  t.teardown(() => server.stop());
  const file = join(tmp.dir, FILE);
  t.equal(statSync(file).mode & 0o777, 0o600, 'the credentials file is readable by the service user only');
  const op = readCredentials(file);
  t.equal(op.email, 'operator@slipway.local');
  const notice = server.output().split('\n').map(logLine).find((l) => l?.credentialsFile !== undefined);
  t.equal(notice?.credentialsFile, file, 'a JSON log line names the file');
  t.equal(notice?.level, 30, 'at info level, shown although the log level is warn');
  checkOutput(t, stdoutOf(server.output()), server.output(), op);
  const me = await account(server.urls.api, op.apiKey);
  t.equal(me.status, 200, 'the API key works');
  t.equal(me.json?.email, op.email);
  t.equal(await signIn(server.urls.auth, op), 303, 'the password and second factor sign in');
});

t.test('a start that could not deliver the credentials leaves the bootstrap to the next start', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  // A non-empty directory where the file goes: the rename onto it fails after the account exists.
  mkdirSync(join(tmp.dir, FILE, 'in-the-way'), { recursive: true });
  const failed = await startSpawned({ dataDir: tmp.dir }).then(() => 'started', (e: Error) => e.message);
  t.match(failed, /server exited with 1/, 'the start fails');
  t.match(failed, /did not start/, 'saying why');
  rmSync(join(tmp.dir, FILE), { recursive: true });

  const server = await startSpawned({ dataDir: tmp.dir });
  t.teardown(() => server.stop());
  const op = readCredentials(join(tmp.dir, FILE));
  t.equal(server.apiKey, op.apiKey, 'this start completed the bootstrap and wrote the file');
  t.equal((await account(server.urls.api, op.apiKey)).json?.email, 'operator@slipway.local', 'the credentials work');
  t.equal(await signIn(server.urls.auth, op), 303, 'the password and second factor sign in');
});

t.test('slipway operator reset-credentials: new credentials, in the file, on a terminal only', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const first = await startSpawned({ dataDir: tmp.dir });
  const file = join(tmp.dir, FILE);
  const before = readFileSync(file, 'utf8');
  await first.stop();
  const server = await startSpawned({ dataDir: tmp.dir });
  t.teardown(() => server.stop());
  t.equal(server.apiKey, undefined, 'a later start issues nothing');
  t.notMatch(server.output(), /credentialsFile/, 'and names no credentials file');
  t.equal(readFileSync(file, 'utf8'), before, 'the file is left as it was');
  const old = readCredentials(file);

  const piped = await runCli(['operator', 'reset-credentials', '--data', tmp.dir]);
  t.equal(piped.code, 0, 'reset-credentials succeeds', { stderr: piped.stderr });
  t.ok(piped.stdout.includes(file), 'stdout names the file');
  const fresh = readCredentials(file);
  t.equal(statSync(file).mode & 0o777, 0o600);
  for (const k of ['password', 'totpSecret', 'apiKey'] as const) {
    t.not(fresh[k], old[k], `a new ${k}`);
    t.notOk((piped.stdout + piped.stderr).includes(fresh[k]), `the ${k} is not printed to a pipe`);
  }
  t.equal((await account(server.urls.api, old.apiKey)).status, 401, 'the old API key no longer works on the running server');
  t.equal((await account(server.urls.api, fresh.apiKey)).status, 200, 'the new one does');
  t.equal(await signIn(server.urls.auth, fresh), 303, 'the new password and second factor sign in');

  const json = await runCli(['operator', 'reset-credentials', '--json', '--data', tmp.dir]);
  t.equal(json.code, 0, 'reset-credentials --json succeeds', { stderr: json.stderr });
  const reply = JSON.parse(json.stdout) as Record<string, string>;
  t.same(Object.keys(reply).sort(), ['account_id', 'credentials_file', 'email'], '--json: where they are, not what they are');
  t.equal(reply.credentials_file, file);

  // A terminal (util-linux `script` gives the command a pseudo-terminal) also sees the secrets.
  const tty = await new Promise<{ code: number; out: string }>((resolve) => {
    execFile('script', ['-qec', `${process.execPath} ${CLI} operator reset-credentials --data ${tmp.dir}`, '/dev/null'], { env: { ...process.env, SLIPWAY_LOG_LEVEL: 'warn' } },
      (err, stdout) => resolve({ code: err ? 1 : 0, out: stdout }));
  });
  if (tty.code !== 0 && !process.env.CI && !existsSync('/usr/bin/script')) {
    t.comment('skipped: util-linux `script` is not installed (apt-get install bsdutils)');
    return;
  }
  t.equal(tty.code, 0, 'reset-credentials on a terminal succeeds', { output: tty.out });
  const shown = readCredentials(file);
  t.ok(tty.out.includes(shown.password) && tty.out.includes(shown.apiKey) && tty.out.includes(shown.totpSecret), 'the terminal sees the new credentials');
});
