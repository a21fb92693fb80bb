/**
 * The engine's import rules (docs/architecture.md "Domains own their data"): each domain's
 * keyspaces (engine/<domain>/keyspaces.ts) are imported only by modules of that domain, so no
 * module reads or writes another domain's records; the server layer calls domain services and
 * never imports keyspaces; engine/store.ts imports nothing from the domains; and a node on the
 * embedded store loads neither the AWS SDK nor the PostgreSQL driver at start. Reads the
 * TypeScript sources (the repository ships them beside dist/) and, for the last rule, the
 * compiled modules (what actually loads).
 */
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const DOMAINS = ['identity', 'oauth', 'platform', 'registry', 'blobs', 'webhooks'];

/** Every .ts file under `dir` (relative to the repository root). */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const p = join(dir, name);
    if (statSync(join(root, p)).isDirectory()) out.push(...sources(p));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The repository-relative paths a module imports (relative specifiers only, `.js` → `.ts`). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const specs = [...text.matchAll(/(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g)].map((m) => m[1] ?? m[2]!);
  return specs.map((s) => relative(root, resolve(join(root, dirname(file)), s)).split(sep).join('/').replace(/\.js$/, '.ts'));
}

/** The domain a path belongs to (`engine/<domain>/…`), or undefined. */
function domainOf(path: string): string | undefined {
  const m = /^engine\/([a-z-]+)\//.exec(path);
  return m && DOMAINS.includes(m[1]!) ? m[1] : undefined;
}

const engineFiles = sources('engine');
const serverFiles = sources('server');

t.test('the rule sees every domain and its keyspaces', async (t) => {
  for (const d of DOMAINS) t.ok(engineFiles.includes(`engine/${d}/keyspaces.ts`), `engine/${d}/keyspaces.ts exists`);
  // The check below must be able to fail: a synthetic import of another domain's keyspaces is caught.
  t.equal(violation('engine/platform/releases.ts', 'engine/registry/keyspaces.ts'), 'engine/platform/releases.ts imports engine/registry/keyspaces.ts');
});

/** Why `from` may not import `to`, or undefined when it may. */
function violation(from: string, to: string): string | undefined {
  const owner = /^engine\/([a-z-]+)\/keyspaces\.ts$/.exec(to)?.[1];
  if (owner === undefined) return undefined;
  return domainOf(from) === owner ? undefined : `${from} imports ${to}`;
}

t.test('no module imports another domain\'s keyspaces', async (t) => {
  const found = [...engineFiles, ...serverFiles].flatMap((f) => importsOf(f).map((to) => violation(f, to)).filter((v): v is string => v !== undefined));
  t.same(found, [], 'only a domain\'s own modules import its keyspaces');
});

t.test('engine/store.ts imports nothing from the domains', async (t) => {
  const found = importsOf('engine/store.ts').filter((to) => domainOf(to) !== undefined);
  t.same(found, [], 'store.ts imports no domain module');
  // No cycle: nothing store.ts reaches (migrations, the domains' migration steps, keyspaces)
  // imports store.ts back.
  const seen = new Set<string>();
  const todo = importsOf('engine/store.ts');
  while (todo.length > 0) {
    const f = todo.pop()!;
    if (seen.has(f) || !f.startsWith('engine/')) continue;
    seen.add(f);
    todo.push(...importsOf(f));
  }
  t.notOk(seen.has('engine/store.ts'), 'no import cycle through engine/store.ts');
});

t.test('records are reached only through the metadata contract', async (t) => {
  // The LMDB environment is exposed for backup only (server/ops/backup.ts); no other module
  // may open a database of it or run an LMDB transaction.
  const allowed = new Set(['engine/store.ts', 'engine/storage/lmdb-metadata.ts', 'server/ops/backup.ts']);
  const found = [...engineFiles, ...serverFiles].filter((f) => !allowed.has(f) && /\.env\.(transaction|openDB|getRange|get)\b|\bopenDB\(/.test(readFileSync(join(root, f), 'utf8')));
  t.same(found, [], 'no module outside the LMDB implementation touches the environment');
});

/**
 * The modules `entry` (a compiled file under dist/) loads at start: static imports only (a
 * dynamic `import()` loads later, when its branch runs), followed through relative specifiers.
 * @returns the files reached and the packages they import
 */
function loadedAtStart(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const f = todo.pop()!;
    if (files.has(f)) continue;
    files.add(f);
    const text = readFileSync(join(root, f), 'utf8');
    for (const m of text.matchAll(/^(?:import|export)\s(?:[^'";]*?\sfrom\s)?'([^']+)'/gm)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) todo.push(relative(root, resolve(join(root, dirname(f)), spec)).split(sep).join('/'));
      else if (!spec.startsWith('node:')) packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  }
  return { files, packages };
}

t.test('an embedded node loads neither the AWS SDK nor the PostgreSQL driver', async (t) => {
  // Both load by dynamic import when the node is configured for S3 or PostgreSQL (server/blob-store.ts,
  // engine/store.ts): about 17 and 6 MiB of RSS a node on LMDB and its data directory does not pay.
  const serve = loadedAtStart('dist/server/cli.js');
  t.ok(serve.files.has('dist/server/main.js') && serve.packages.has('lmdb'), 'the walk follows the server\'s own imports');
  t.same([...serve.packages].filter((p) => p === 'pg' || p.startsWith('@aws-sdk/')), [], 'no static path from the CLI reaches @aws-sdk/* or pg');
  // The check can fail: the S3 backend and the PostgreSQL store do import them statically.
  t.ok(loadedAtStart('dist/engine/blobs/s3-backend.js').packages.has('@aws-sdk/client-s3'));
  t.ok(loadedAtStart('dist/engine/storage/postgres-metadata.js').packages.has('pg'));
});
