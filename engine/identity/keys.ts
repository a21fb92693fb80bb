/**
 * The server key: 32 random bytes in `<data>/keys/server.key` (mode 0600), or in a file of the
 * operator's choosing (setting SLIPWAY_KEY_FILE), created at first start. Purpose-bound subkeys are derived with HKDF-SHA256 so one secret never serves two
 * purposes: registry bearer tokens, upload-session capabilities, sealing TOTP secrets.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export type KeyPurpose = 'registry-token' | 'upload-state' | 'totp-seal' | 'csrf';

export class ServerKeys {
  readonly #root: Buffer;
  readonly #derived = new Map<KeyPurpose, Buffer>();

  constructor(root: Buffer) {
    if (root.length !== 32) throw new Error('server key must be 32 bytes');
    this.#root = root;
  }

  /**
   * Loads the server key, creating it (0600) on first start.
   * @param keyFile where the key lives; default `<dataDir>/keys/server.key`. Its directory is
   *        created (0700) only for the default location.
   * @throws Error when the file exists but does not hold exactly 32 bytes.
   */
  static loadOrCreate(dataDir: string, keyFile?: string): ServerKeys {
    const path = keyFile ?? join(dataDir, 'keys', 'server.key');
    if (keyFile === undefined) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    try {
      const root = readFileSync(path);
      if (root.length !== 32) throw new Error(`server key file ${path} holds ${root.length} bytes; it must hold exactly 32 random bytes`);
      return new ServerKeys(root);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      const key = randomBytes(32);
      writeFileSync(path, key, { mode: 0o600, flag: 'wx' });
      return new ServerKeys(key);
    }
  }

  /** The 32-byte subkey for one purpose. */
  key(purpose: KeyPurpose): Buffer {
    let k = this.#derived.get(purpose);
    if (!k) {
      k = Buffer.from(hkdfSync('sha256', this.#root, Buffer.alloc(0), 'slipway/' + purpose, 32));
      this.#derived.set(purpose, k);
    }
    return k;
  }

  /** HMAC-SHA256 of `data` under a purpose key, base64url. */
  sign(purpose: KeyPurpose, data: string): string {
    return createHmac('sha256', this.key(purpose)).update(data).digest('base64url');
  }

  /** Constant-time check of a `sign` result. */
  verify(purpose: KeyPurpose, data: string, signature: string): boolean {
    const a = Buffer.from(this.sign(purpose, data));
    const b = Buffer.from(signature);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** AES-256-GCM seal of a small secret; output `iv.tag.ciphertext` in base64url. */
  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key('totp-seal'), iv);
    const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return [iv, c.getAuthTag(), body].map((b) => b.toString('base64url')).join('.');
  }

  /** Opens a `seal` result; throws when tampered with. */
  unseal(sealed: string): string {
    const [iv, tag, body] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
    const d = createDecipheriv('aes-256-gcm', this.key('totp-seal'), iv!);
    d.setAuthTag(tag!);
    return Buffer.concat([d.update(body!), d.final()]).toString('utf8');
  }
}
