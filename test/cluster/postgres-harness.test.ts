/**
 * The PostgreSQL test harness starts a real server that `pg` reaches over TCP and over the unix
 * socket, and that enforces SERIALIZABLE isolation: two transactions that each read what the
 * other writes conflict (SQLSTATE 40001) and a retry loop makes both land. stop() removes
 * everything.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { startPostgres, postgresSkip, type Postgres } from '../helpers/postgres.js';

const skip = postgresSkip();

/** Runs `fn` in a SERIALIZABLE transaction, retrying on serialization failures (40001). */
async function serializable<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>, onRetry: () => void): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const c = await pool.connect();
    try {
      await c.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
      const r = await fn(c);
      await c.query('COMMIT');
      return r;
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      if ((e as { code?: string }).code !== '40001' || attempt > 20) throw e;
      onRetry();
    } finally {
      c.release();
    }
  }
}

t.test('postgres harness', { skip }, async (t) => {
  const server: Postgres = await startPostgres();
  t.teardown(() => server.stop());
  t.comment(`postgres ready in ${server.timings.total} ms ${JSON.stringify(server.timings)}`);

  const pool = new pg.Pool({ connectionString: server.connectionString, max: 4 });
  t.teardown(() => pool.end());

  t.test('reachable over TCP and the unix socket', async (t) => {
    const r = await pool.query('SELECT current_setting($1) AS v', ['server_version_num']);
    t.match(r.rows[0].v, /^15\d{4}$/);
    const viaSocket = new pg.Client({ host: server.socketDir, port: server.port, user: 'postgres', database: 'postgres' });
    await viaSocket.connect();
    t.equal((await viaSocket.query('SELECT 1 AS one')).rows[0].one, 1);
    await viaSocket.end();
  });

  t.test('SERIALIZABLE write skew is refused, and retried to a consistent result', async (t) => {
    await pool.query('CREATE TABLE oncall (name text PRIMARY KEY, on_duty boolean NOT NULL)');
    // The invariant: at least one person stays on duty. Each transaction checks it, then takes
    // a different person off duty: under weaker isolation both commit and nobody is on duty.
    for (let round = 0; round < 10; round++) {
      await pool.query('TRUNCATE oncall');
      await pool.query("INSERT INTO oncall VALUES ('alice', true), ('bob', true)");
      // Both transactions read before either writes, so the conflict is certain.
      let reads = 0;
      let release!: () => void;
      const bothRead = new Promise<void>((r) => { release = r; });
      let retries = 0;
      const goOff = (who: string) => serializable(pool, async (c) => {
        const n = Number((await c.query('SELECT count(*) AS n FROM oncall WHERE on_duty')).rows[0].n);
        if (++reads === 2) release();
        await bothRead;
        if (n < 2) return false;
        await c.query('UPDATE oncall SET on_duty = false WHERE name = $1', [who]);
        return true;
      }, () => { retries++; });
      const results = await Promise.all([goOff('alice'), goOff('bob')]);
      const onDuty = Number((await pool.query('SELECT count(*) AS n FROM oncall WHERE on_duty')).rows[0].n);
      t.equal(onDuty, 1, `round ${round}: exactly one stays on duty`);
      t.same(results.filter(Boolean).length, 1, `round ${round}: exactly one transaction took someone off duty`);
      t.ok(retries >= 1, `round ${round}: the loser was retried after a serialization failure`);
    }
  });

  t.test('stop() ends the server and removes its directory', async (t) => {
    const other = await startPostgres();
    const c = new pg.Client({ connectionString: other.connectionString });
    await c.connect();
    c.on('error', () => {});
    await other.stop();
    t.notOk(existsSync(other.dir), 'directory removed');
    await t.rejects(new pg.Client({ connectionString: other.connectionString, connectionTimeoutMillis: 2000 }).connect(), 'server gone');
  });
});
