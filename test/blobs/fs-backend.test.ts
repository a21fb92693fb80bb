/**
 * The blob contract suite against the filesystem backend, in a temp data directory per subtest.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { blobContractSuite } from '../helpers/blob-contract-suite.js';

const dirs: string[] = [];
t.teardown(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

blobContractSuite(t, {
  partSize: 5 * 1024 * 1024,
  async fresh() {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-fsblobs-'));
    dirs.push(dir);
    return { backend: new FsBlobBackend(dir), reopen: () => new FsBlobBackend(dir) };
  },
});
