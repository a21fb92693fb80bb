/**
 * The server key: 32 random bytes that every node of an installation shares. It comes from, in
 * this order: the environment variable SLIPWAY_SERVER_KEY (base64 of the 32 bytes), a file of
 * the operator's choosing (SLIPWAY_KEY_FILE), or `<data>/keys/server.key` (mode 0600), the two
 * files being created at first start when absent. Purpose-bound subkeys are derived with
 * HKDF-SHA256 so one secret never serves two purposes: registry bearer tokens, upload-session
 * capabilities, sealing TOTP secrets, CSRF form tokens, and the key's fingerprint.
 *
 * Rotation (docs/cluster.md "Shared secrets and rotation"): a second key, the *accepted* key
 * (SLIPWAY_ACCEPTED_SERVER_KEY or SLIPWAY_ACCEPTED_KEY_FILE), is accepted when verifying and
 * unsealing but never signs or seals: the next key before a rotation, the previous one after.
 * The fingerprint (`fingerprint()`, an HMAC of a constant under a subkey, never the key) is what
 * the metadata store records to refuse a node whose key differs from the cluster's
 * (engine/identity/key-check.ts).
 */
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export type KeyPurpose = 'registry-token' | 'upload-state' | 'totp-seal' | 'csrf' | 'fingerprint';

/** Bytes in a server key. */
export const SERVER_KEY_BYTES = 32;

/** The constant whose HMAC under the `fingerprint` subkey is a key's fingerprint. */
const FINGERPRINT_INPUT = 'slipway server key fingerprint v1';

/** One 32-byte root key and its derived subkeys. */
class RootKey {
  readonly #derived = new Map<KeyPurpose, Buffer>();
  readonly #objects = new Map<KeyPurpose, KeyObject>();
  constructor(readonly root: Buffer) {
    if (root.length !== SERVER_KEY_BYTES) throw new Error(`server key must be ${SERVER_KEY_BYTES} bytes`);
  }

  key(purpose: KeyPurpose): Buffer {
    let k = this.#derived.get(purpose);
    if (!k) {
      k = Buffer.from(hkdfSync('sha256', this.root, Buffer.alloc(0), 'slipway/' + purpose, 32));
      this.#derived.set(purpose, k);
    }
    return k;
  }

  /**
   * The subkey as a KeyObject, made once: node:crypto turns a raw key into one on every
   * createHmac/createCipheriv call, which cost ~20 µs of the ~25 µs of a token's HMAC here.
   */
  keyObject(purpose: KeyPurpose): KeyObject {
    let k = this.#objects.get(purpose);
    if (!k) {
      k = createSecretKey(this.key(purpose));
      this.#objects.set(purpose, k);
    }
    return k;
  }

  sign(purpose: KeyPurpose, data: string): string {
    return createHmac('sha256', this.keyObject(purpose)).update(data).digest('base64url');
  }

  verify(purpose: KeyPurpose, data: string, signature: string): boolean {
    const a = Buffer.from(this.sign(purpose, data));
    const b = Buffer.from(signature);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  unseal(sealed: string): string {
    const [iv, tag, body] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
    const d = createDecipheriv('aes-256-gcm', this.keyObject('totp-seal'), iv!);
    d.setAuthTag(tag!);
    return Buffer.concat([d.update(body!), d.final()]).toString('utf8');
  }
}

/** Where the keys come from (server/config.ts fills it from the settings). */
export interface KeySources {
  /** The data directory: the default key file is `<dataDir>/keys/server.key`. */
  dataDir: string;
  /** SLIPWAY_SERVER_KEY: base64 of 32 bytes. Wins over the files. */
  serverKey?: string;
  /** SLIPWAY_KEY_FILE. */
  keyFile?: string;
  /** SLIPWAY_ACCEPTED_SERVER_KEY: base64 of 32 bytes. */
  acceptedServerKey?: string;
  /** SLIPWAY_ACCEPTED_KEY_FILE: a file holding 32 bytes (never created). */
  acceptedKeyFile?: string;
}

/**
 * Decodes a base64 (or base64url) server key. @throws Error naming `setting` (never the value)
 * when it does not decode to exactly 32 bytes.
 */
export function decodeServerKey(value: string, setting: string): Buffer {
  const text = value.trim();
  const bytes = /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64') : Buffer.alloc(0);
  if (bytes.length !== SERVER_KEY_BYTES) {
    throw new Error(`${setting} must be the base64 of exactly ${SERVER_KEY_BYTES} random bytes (e.g. the output of: head -c 32 /dev/urandom | base64); the value given decodes to ${bytes.length} bytes`);
  }
  return bytes;
}

function readKeyFile(path: string, setting: string): Buffer {
  const root = readFileSync(path);
  if (root.length !== SERVER_KEY_BYTES) throw new Error(`server key file ${path} (${setting}) holds ${root.length} bytes; it must hold exactly ${SERVER_KEY_BYTES} random bytes`);
  return root;
}

export class ServerKeys {
  readonly #current: RootKey;
  readonly #accepted: RootKey | null;

  /**
   * @param root the key that signs and seals (32 bytes)
   * @param accepted a second key accepted when verifying and unsealing (32 bytes), or none
   * @throws Error when a key is not 32 bytes.
   */
  constructor(root: Buffer, accepted?: Buffer) {
    this.#current = new RootKey(root);
    this.#accepted = accepted && !accepted.equals(root) ? new RootKey(accepted) : null;
  }

  /**
   * Loads the keys from their sources (see the top of this file). Without SLIPWAY_SERVER_KEY,
   * the signing key's file (`keyFile`, default `<dataDir>/keys/server.key`, whose directory is
   * then created 0700) is created (0600) when absent; the accepted key's never is.
   * @throws Error naming the setting when a key is malformed, an accepted key file is missing,
   *         or both SLIPWAY_SERVER_KEY and SLIPWAY_KEY_FILE are set.
   */
  static load(src: KeySources): ServerKeys {
    if (src.serverKey !== undefined && src.keyFile !== undefined) {
      throw new Error('SLIPWAY_SERVER_KEY and SLIPWAY_KEY_FILE are both set; give the server key one way only');
    }
    if (src.acceptedServerKey !== undefined && src.acceptedKeyFile !== undefined) {
      throw new Error('SLIPWAY_ACCEPTED_SERVER_KEY and SLIPWAY_ACCEPTED_KEY_FILE are both set; give the accepted key one way only');
    }
    const current = src.serverKey !== undefined ? decodeServerKey(src.serverKey, 'SLIPWAY_SERVER_KEY') : loadOrCreateFile(src.dataDir, src.keyFile);
    const accepted = src.acceptedServerKey !== undefined
      ? decodeServerKey(src.acceptedServerKey, 'SLIPWAY_ACCEPTED_SERVER_KEY')
      : src.acceptedKeyFile !== undefined ? readKeyFile(src.acceptedKeyFile, 'SLIPWAY_ACCEPTED_KEY_FILE') : undefined;
    return new ServerKeys(current, accepted);
  }

  /** The 32-byte subkey of the signing key for one purpose. */
  key(purpose: KeyPurpose): Buffer {
    return this.#current.key(purpose);
  }

  /** HMAC-SHA256 of `data` under a purpose key of the signing key, base64url. */
  sign(purpose: KeyPurpose, data: string): string {
    return this.#current.sign(purpose, data);
  }

  /** Constant-time check of a `sign` result made with the signing key or the accepted key. */
  verify(purpose: KeyPurpose, data: string, signature: string): boolean {
    return this.#current.verify(purpose, data, signature) || (this.#accepted?.verify(purpose, data, signature) ?? false);
  }

  /** AES-256-GCM seal of a small secret under the signing key; output `iv.tag.ciphertext` in base64url. */
  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.#current.keyObject('totp-seal'), iv);
    const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return [iv, c.getAuthTag(), body].map((b) => b.toString('base64url')).join('.');
  }

  /** Opens a `seal` result made with the signing key or the accepted key; throws when tampered with or sealed under another key. */
  unseal(sealed: string): string {
    try {
      return this.#current.unseal(sealed);
    } catch (e) {
      if (!this.#accepted) throw e;
      return this.#accepted.unseal(sealed);
    }
  }

  /** True when `sealed` opens with the signing key (false: sealed under the accepted key, or broken). */
  sealedWithCurrent(sealed: string): boolean {
    try {
      this.#current.unseal(sealed);
      return true;
    } catch {
      return false;
    }
  }

  /** The signing key's fingerprint: HMAC-SHA256 of a constant under its `fingerprint` subkey, base64url (43 characters). */
  fingerprint(): string {
    return this.#current.sign('fingerprint', FINGERPRINT_INPUT);
  }

  /** The accepted key's fingerprint, or null when none is configured. */
  acceptedFingerprint(): string | null {
    return this.#accepted?.sign('fingerprint', FINGERPRINT_INPUT) ?? null;
  }
}

/**
 * Writes a new server key (32 random bytes) to `path`, mode 0600, creating its directory (0700);
 * never overwrites (`slipway key generate`).
 * @returns the key
 * @throws Error when the file exists (EEXIST) or cannot be written.
 */
export function generateKeyFile(path: string): Buffer {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const key = randomBytes(SERVER_KEY_BYTES);
  try {
    writeFileSync(path, key, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${path} exists; a server key is never overwritten (move it away first; docs/cluster.md "Rotating the key")`);
    throw e;
  }
  return key;
}

function loadOrCreateFile(dataDir: string, keyFile?: string): Buffer {
  const path = keyFile ?? join(dataDir, 'keys', 'server.key');
  if (keyFile === undefined) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    return readKeyFile(path, keyFile === undefined ? 'the default key file' : 'SLIPWAY_KEY_FILE');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    const key = randomBytes(SERVER_KEY_BYTES);
    writeFileSync(path, key, { mode: 0o600, flag: 'wx' });
    return key;
  }
}
