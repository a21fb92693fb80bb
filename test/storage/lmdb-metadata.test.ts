/** The metadata contract suite against the embedded LMDB implementation. */
import t from 'tap';
import { open } from 'lmdb';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import { metadataContractSuite } from '../helpers/metadata-contract-suite.js';

const tmp = tempDir();
t.teardown(() => tmp.cleanup());
const openEnv = () => new LmdbMetadataStore(open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack', overlappingSync: false }));

metadataContractSuite(t, {
  open: async () => openEnv(),
  reopen: async (store) => { await store.close(); return openEnv(); },
  syncReads: true,
});
