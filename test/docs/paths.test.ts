/**
 * The documentation names only paths that exist: every repository path that README.md,
 * bench/README.md or a file in docs/ mentions (`engine/…`, `server/…`, `workers/…`, `bench/…`,
 * `test/…`, `docs/…`, `deploy/…`, `.ci/…`), and every relative Markdown link in them, must name a
 * file or directory of the repository. A doc that still names a moved or deleted file fails here
 * with the document, line and path. Placeholders (`<id>`, `*`, `{…}`, `…`) are not paths and are
 * skipped, and so is anything under dist/ (built files) or data/ (a data directory's layout).
 */
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The Markdown documents checked, relative to the repository root. */
function documents(): string[] {
  const docs = readdirSync(join(root, 'docs')).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`);
  return ['README.md', 'bench/README.md', ...docs].filter((p) => existsSync(join(root, p)));
}

const TOP = '(?:engine|server|workers|bench|test|docs|deploy|\\.ci)';
/** A repository path in running text: starts at a word boundary with a top-level folder. */
const PATH = new RegExp(`(?<![\\w./-])${TOP}/[A-Za-z0-9_.\\-/<>*{}…]*`, 'g');
/** A relative Markdown link or image target. */
const LINK = /\]\(([^)#\s]+)(?:#[^)]*)?\)/g;

/** A mention is a placeholder or pattern rather than a concrete path. */
function isPattern(p: string): boolean {
  return /[<>*{}…]/.test(p);
}

/**
 * Names that look like paths but are not: the benchmark's repository names (`<app>/<type>` of its
 * app `bench`).
 */
const NOT_PATHS = new Set(['bench/web', 'bench/worker', 'bench/api']);

/**
 * Whether a mention names something in the repository: the path itself, a test or module named
 * without its extension (`test/registry/credential-memo`), or a compiled `.js` whose `.ts` source
 * is here (`bench/run.js`).
 */
function exists(p: string): boolean {
  const abs = join(root, p);
  return existsSync(abs) || existsSync(`${abs}.ts`) || existsSync(`${abs}.test.ts`)
    || (p.endsWith('.js') && existsSync(abs.replace(/\.js$/, '.ts')));
}

/** Strips sentence punctuation that follows a path in prose. */
function trimPath(p: string): string {
  return p.replace(/[.,:;]+$/, '');
}

interface Missing { doc: string; line: number; path: string }

/** Every path named by `doc` that does not exist. */
function missingIn(doc: string): Missing[] {
  const out: Missing[] = [];
  const lines = readFileSync(join(root, doc), 'utf8').split('\n');
  lines.forEach((text, i) => {
    for (const m of text.matchAll(PATH)) {
      const p = trimPath(m[0]);
      if (isPattern(p) || NOT_PATHS.has(p)) continue;
      if (!exists(p)) out.push({ doc, line: i + 1, path: p });
    }
    for (const m of text.matchAll(LINK)) {
      const target = m[1]!;
      if (/^[a-z]+:/i.test(target) || isPattern(target)) continue;
      const abs = resolve(join(root, dirname(doc)), target);
      if (!existsSync(abs)) out.push({ doc, line: i + 1, path: target });
    }
  });
  return out;
}

t.test('README.md and docs/ name only paths that exist', async (t) => {
  const docs = documents();
  t.ok(docs.length >= 3, `checked ${docs.length} documents`);
  const missing = docs.flatMap(missingIn);
  t.same(missing.map((m) => `${m.doc}:${m.line} ${m.path}`), [], 'no missing path');
});

t.test('the check finds a missing path (it can fail)', async (t) => {
  const text = 'see `server/no-such-module.ts` and [x](no-such.md)';
  const found = [...text.matchAll(PATH)].map((m) => trimPath(m[0]));
  t.same(found, ['server/no-such-module.ts']);
  t.notOk(existsSync(join(root, found[0]!)));
  t.same([...text.matchAll(LINK)].map((m) => m[1]), ['no-such.md']);
});
