/**
 * Writes docs/settings.md from the settings table (server/settings/describe.ts):
 * `npm run docs:settings`. test/config/settings-docs.test.ts fails while the file is out of date.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { settingsMarkdown } from './describe.js';

/** docs/settings.md of this checkout (this file runs from dist/server/settings/). */
export const SETTINGS_DOC = fileURLToPath(new URL('../../../docs/settings.md', import.meta.url));

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(SETTINGS_DOC, settingsMarkdown());
  console.log(`wrote ${SETTINGS_DOC}`);
}
