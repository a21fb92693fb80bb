/**
 * Where the operator's credentials go when they are issued (first start, `slipway operator
 * reset-credentials`): a file readable by the service's user only, in the data directory of the
 * node or host that issued them, never stdout or the log (service managers keep both). A human at
 * a terminal also sees them there. docs/operator-guide.md (First start and the operator's credentials).
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CreatedAccount } from '../../engine/identity/accounts.js';
import { DATA_FILE_MODE } from '../../engine/data-dir.js';

/** The credentials file's name in the data directory. */
export const CREDENTIALS_FILE = 'operator-credentials.json';

/** What the file holds (JSON, one object). */
export interface CredentialsFile {
  account_id: string;
  email: string;
  password: string;
  totp_secret: string;
  api_key: string;
  /** ISO 8601 time of issue. */
  issued_at: string;
  /** The node (SLIPWAY_NODE_NAME) or host that issued them. */
  issued_by: string;
}

/**
 * Writes `issued` to `<dataDir>/operator-credentials.json`, mode 0600, replacing an earlier file
 * atomically (written to a temporary name, flushed, renamed), and returns the file's absolute path.
 * @throws Error from the file system (the directory is not writable, the disk is full).
 */
export function writeCredentialsFile(dataDir: string, issued: CreatedAccount, issuedBy: string, now: number): string {
  const body: CredentialsFile = {
    account_id: issued.account.id, email: issued.account.email, password: issued.generatedPassword ?? '',
    totp_secret: issued.totpSecret, api_key: issued.apiKey, issued_at: new Date(now).toISOString(), issued_by: issuedBy,
  };
  const file = resolve(join(dataDir, CREDENTIALS_FILE));
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'wx', DATA_FILE_MODE);
  try {
    writeSync(fd, `${JSON.stringify(body, null, 2)}\n`);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, file);
  const dir = openSync(resolve(dataDir), 'r');
  try { fsyncSync(dir); } finally { closeSync(dir); }
  return file;
}

/**
 * The credentials as lines for a human at a terminal: call only when the output is one
 * (`process.stdout.isTTY`), never for a pipe, a file or a service manager's log.
 */
export function credentialsForTerminal(issued: CreatedAccount, file: string): string {
  const rows = [['email', issued.account.email], ['password', issued.generatedPassword ?? ''], ['totp_secret', issued.totpSecret], ['api_key', issued.apiKey]];
  return [
    `The operator's credentials (also in ${file}, readable by this user only; delete it once they are stored safely):`,
    ...rows.map(([k, v]) => `  ${k!.padEnd(12)} ${v}`),
    '',
  ].join('\n');
}
