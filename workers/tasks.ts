/** The Piscina task file: every worker task, exported by name (see workers/pool.ts). */
export { readImageConfig, scanLayerTask as scanLayer } from './inspect-image.js';
export { hashFile } from './hash-file.js';
