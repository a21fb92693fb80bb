/**
 * The settings table of server/settings/schema.ts in words: the settings part of `slipway
 * --help` and docs/settings.md (written by server/settings/write-docs.ts; a test fails when the
 * file differs from what this module makes).
 */
import { flagOf, SETTINGS, type Setting } from './schema.js';

/** The default of a setting as shown in help and docs. */
export function defaultOf(s: Setting): string {
  if (s.defaultText !== undefined) return s.defaultText;
  if (s.default === undefined) return 'unset';
  if (s.default === '') return '(empty)';
  return s.kind.show ? s.kind.show(s.default) : String(s.default);
}

const GROUP_TITLES: Record<string, string> = {
  '': 'General', registry: 'Registry host', upload: 'Upload host and upload sessions', api: 'Platform API',
  rate_limit: 'API rate limits', auth: 'OAuth host', admin: 'Admin listener', log: 'Logging', tls: 'TLS',
  server_key: 'Server key', gc: 'Garbage collection', database: 'Metadata database (cluster mode)',
  blob_store: 'Blob store', s3: 'Blob store',
};

function groupOf(s: Setting): string {
  const first = s.path.includes('.') ? s.path.split('.')[0]! : s.path === 'blob_store' ? 'blob_store' : '';
  return GROUP_TITLES[first] ?? first;
}

function grouped(): [string, Setting[]][] {
  const groups = new Map<string, Setting[]>();
  for (const s of SETTINGS) {
    const g = groupOf(s);
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g)!.push(s);
  }
  return [...groups];
}

/** The settings part of `slipway --help`: every setting with its flag, variable, key, value and default. */
export function settingsHelp(): string {
  const lines = [
    'Settings: a key of the config file (--config FILE or SLIPWAY_CONFIG; YAML or TOML), an environment',
    'variable and a flag each; a flag wins over the environment, which wins over the file.',
    'The full table is docs/settings.md; check a file with `slipway config check --config FILE`.',
  ];
  for (const [title, settings] of grouped()) {
    lines.push('', `${title}:`);
    for (const s of settings) {
      const flag = flagOf(s);
      const names = [s.env, s.path].join(', ');
      lines.push(`  ${flag === undefined ? `${s.env} (environment only)` : `--${flag} ${s.kind.placeholder}  (${names})`}`);
      lines.push(`      ${s.help} Takes ${s.kind.expects}; default ${defaultOf(s)}.`);
    }
  }
  return lines.join('\n');
}

const cell = (t: string) => t.replace(/\|/g, '\\|').replace(/</g, '&lt;');

/** docs/settings.md, whole. */
export function settingsMarkdown(): string {
  const out = [
    '# Settings reference',
    '',
    '<!-- Generated from server/settings/schema.ts by `npm run docs:settings`; do not edit by hand. -->',
    '',
    'Every setting has three names: a key in the config file, an environment variable and a flag.',
    'A flag wins over the environment, which wins over the config file, which wins over the default.',
    'How to write and check a config file, and how secrets are given: [configuration.md](configuration.md).',
    'Flags that earlier releases spelled differently are still accepted (listed after the first flag).',
  ];
  for (const [title, settings] of grouped()) {
    out.push('', `## ${title}`, '', '| Key | Environment variable | Flag | Value | Default | Meaning |', '|---|---|---|---|---|---|');
    for (const s of settings) {
      const flag = flagOf(s);
      const flags = flag === undefined ? 'environment only' : [`--${flag}`, ...(s.aliases ?? []).map((a) => `--${a}`)].map((f) => `\`${f}\``).join(', ');
      out.push(`| \`${s.path}\` | \`${s.env}\` | ${flags} | ${cell(s.kind.expects)} | ${cell(defaultOf(s))} | ${cell(s.help)} |`);
    }
  }
  return out.join('\n') + '\n';
}
