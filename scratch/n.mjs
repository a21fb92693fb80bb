import { startPostgres } from '/work/wt-pgcache/dist/test/helpers/postgres.js';
import pg from 'pg';
const db = await startPostgres();
const c = new pg.Client({ connectionString: db.connectionString, query_timeout: 6000, keepAlive: true });
c.on('notification', m => console.log('notif', m));
await c.connect(); await c.query('LISTEN slipway_kv');
await c.query('SELECT pg_notify($1, $2)', ['slipway_kv', 'x:1:[]']);
await new Promise(r => setTimeout(r, 300));
await c.end(); await db.stop();
