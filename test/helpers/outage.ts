/**
 * The node a database-outage test starts: a real PostgreSQL and one in-process node on it with
 * 2-second connect and statement timeouts (so requests during the outage end quickly), holding
 * one app and one pushed image. Both are stopped by `t`'s teardown.
 */
import type { Test } from 'tap';
import { join } from 'node:path';
import { startInProcess, type InProcessSlipway } from './harness.js';
import { startPostgres, type Postgres } from './postgres.js';
import { basic, createApp } from './http.js';
import { buildImage, sampleSpec, type BuiltImage } from './image.js';
import { pushBuiltImage, type Target } from './registry.js';

export interface OutageNode {
  db: Postgres;
  node: InProcessSlipway;
  /** The operator's API key. */
  key: string;
  /** The image pushed as `<app>/web:v1`. */
  img: BuiltImage;
  registry: Target;
}

/** Starts PostgreSQL and a node on it, creates `app` and pushes an image to `<app>/web:v1`. */
export async function startOutageNode(t: Test, app: string): Promise<OutageNode> {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const node = await startInProcess({
    databaseUrl: db.connectionString,
    env: { SLIPWAY_DATABASE_CONNECT_TIMEOUT: '2', SLIPWAY_DATABASE_STATEMENT_TIMEOUT: '2' },
  });
  t.teardown(() => node.stop());
  const key = node.apiKey!;
  t.equal((await createApp(node.api, key, app)).status, 201);
  const img = await buildImage(join(node.dataDir, 'img'), sampleSpec());
  const registry = { registry: node.urls.registry, auth: basic('_', key) };
  await pushBuiltImage(registry, `${app}/web`, 'v1', img);
  return { db, node, key, img, registry };
}
