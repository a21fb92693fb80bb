/**
 * docs/settings.md is generated from the settings schema (server/settings/describe.ts); this
 * fails while the file in the repository differs, naming the command that rewrites it.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { settingsMarkdown } from '../../server/settings/describe.js';
import { SETTINGS_DOC } from '../../server/settings/write-docs.js';
import { SETTINGS } from '../../server/settings/schema.js';

t.test('docs/settings.md is the table the schema makes', async (t) => {
  const onDisk = readFileSync(SETTINGS_DOC, 'utf8');
  t.ok(onDisk === settingsMarkdown(), 'docs/settings.md is up to date (if not: npm run docs:settings)');
  for (const s of SETTINGS) t.ok(onDisk.includes(`| \`${s.path}\` | \`${s.env}\` |`), `${s.path} has its row`);
});
