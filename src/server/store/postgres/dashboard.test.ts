/**
 * What only the PostgreSQL TeamStore has to show: servers sharing one database (its contract runs from
 * test/store-contract/contracts.test.ts). Needs RISKCHECK_TEST_DATABASE_URL (e.g.
 * postgres://postgres@127.0.0.1:5432/test); every case gets a fresh schema of its own, dropped afterwards.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createPgTeamStore } from './dashboard.js'
import { DASHBOARD_LEDGER, migratePostgres, PG_DASHBOARD_MIGRATIONS } from './migrations.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
if (!url) {
  console.log('dashboard PostgreSQL TeamStore suite skipped: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')
}

const freshSchema = async () => {
  const schema = `rc_dash_${randomBytes(6).toString('hex')}`
  const drop = async () => {
    const admin = new pg.Pool({ connectionString: url })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
  }
  return { schema, drop }
}

/** The dashboard's list through the one PostgreSQL runner, on its own ledger. */
const migrateDashboard = (pool: pg.Pool, nowMs: number) => migratePostgres(pool, { migrations: PG_DASHBOARD_MIGRATIONS, ledger: DASHBOARD_LEDGER, nowMs })

describe.skipIf(!url)('TeamStore on PostgreSQL', () => {
  it('migrates once even when several servers start at the same time', async () => {
    const { schema, drop } = await freshSchema()
    const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: url!, options: `-c search_path=${schema}` }))
    try {
      await pools[0]!.query(`CREATE SCHEMA ${schema}`)
      const results = await Promise.all(pools.map((p) => migrateDashboard(p, 7)))
      expect(results.flat()).toEqual(PG_DASHBOARD_MIGRATIONS.map((m) => m.version))
      expect((await pools[0]!.query('SELECT version FROM dashboard_migrations')).rows).toEqual(PG_DASHBOARD_MIGRATIONS.map((m) => ({ version: m.version })))
    } finally {
      await Promise.all(pools.map((p) => p.end()))
      await drop()
    }
  })

  it('a version 1 database migrates to the last version, keeping its users, tokens and sign-in failures', async () => {
    const { schema, drop } = await freshSchema()
    const pool = new pg.Pool({ connectionString: url!, options: `-c search_path=${schema}` })
    try {
      await pool.query(`CREATE SCHEMA ${schema}`)
      await pool.query('CREATE TABLE dashboard_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
      await pool.query(PG_DASHBOARD_MIGRATIONS[0]!.sql)
      await pool.query('INSERT INTO dashboard_migrations VALUES (1, $1, 1)', [PG_DASHBOARD_MIGRATIONS[0]!.name])
      await pool.query("INSERT INTO dashboard_users (id, email, password_hash, created_at) VALUES ('u', 'a@x.test', 'h', 1)")
      await pool.query("INSERT INTO dashboard_tokens VALUES ('h', 'invite', 'u', 'org_a', 'b@x.test', 'admin', 1, 100)")
      await pool.query("INSERT INTO dashboard_login_failures VALUES ('k', 5)")
      expect(await migrateDashboard(pool, 7)).toEqual(PG_DASHBOARD_MIGRATIONS.slice(1).map((m) => m.version))
      const store = await createPgTeamStore({ pool })
      expect(await store.getUser('u')).toMatchObject({ email: 'a@x.test', totpSecret: null, totpEnabledAt: null })
      expect(await store.listInvites('org_a', 2)).toMatchObject([{ hash: 'h', email: 'b@x.test', role: 'admin' }])
      expect(await store.loginFailures('k', 0)).toBe(1)
      await store.createToken({ hash: 'r', kind: 'reset', userId: 'u', orgId: null, email: 'a@x.test', role: null, createdAt: 1, expiresAt: 100 })
      expect(await store.reserveMail([{ key: 'reset:account:u', limit: 1, windowMs: 60_000 }], 10)).toEqual({ ok: true, nextAt: 60_010 })
      expect((await store.createAccount({ id: 'u2', email: 'c@x.test', passwordHash: 'h' }, { orgId: 'org_c', role: 'owner' }, 2))?.id).toBe('u2')
      await store.close()
    } finally {
      await pool.end()
      await drop()
    }
  })

  it('a token is taken by exactly one of many concurrent takers', async () => {
    const { schema, drop } = await freshSchema()
    const store = await createPgTeamStore({ connectionString: url!, schema })
    try {
      await store.createToken({ hash: 'h', kind: 'invite', userId: 'u', orgId: 'o', email: 'a@x.test', role: 'admin', createdAt: 1, expiresAt: 10_000 })
      const taken = await Promise.all(Array.from({ length: 8 }, () => store.consumeToken('h', 'invite', 5)))
      expect(taken.filter((t) => t !== null)).toHaveLength(1)
    } finally {
      await store.close()
      await drop()
    }
  })

  it('two servers on one database share the sign-in count: a burst over both passes the limit by none', async () => {
    const { schema, drop } = await freshSchema()
    const a = await createPgTeamStore({ connectionString: url!, schema })
    const b = await createPgTeamStore({ connectionString: url!, schema })
    try {
      const keys = [
        { key: 'email:x@y.test', limit: 5 },
        { key: 'ip:203.0.113.9', limit: 50 },
      ]
      const taken = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).takeLoginAttempt(`t${i}`, keys, 1000 + i, 0)))
      expect(taken.filter(Boolean)).toHaveLength(5)
      expect(await a.loginFailures('email:x@y.test', 0)).toBe(5)
      expect(await b.loginFailures('ip:203.0.113.9', 0)).toBe(5)
    } finally {
      await a.close()
      await b.close()
      await drop()
    }
  })

  it('the mail throttle holds across instances: of 12 reservations at once from two pools, exactly the limit go', async () => {
    const { schema, drop } = await freshSchema()
    const a = await createPgTeamStore({ connectionString: url!, schema })
    const b = await createPgTeamStore({ connectionString: url!, schema })
    try {
      const quotas = [
        { key: 'invite:team:t1', limit: 3, windowMs: 3_600_000 },
        { key: 'invite:account:u1', limit: 10, windowMs: 3_600_000 },
      ]
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).reserveMail(quotas, 1000 + i)))
      expect(answers.filter((r) => r.ok)).toHaveLength(3)
      const pool = new pg.Pool({ connectionString: url!, options: `-c search_path=${schema}` })
      const counted = (await pool.query<{ key: string; n: string }>('SELECT key, COUNT(*) AS n FROM dashboard_mail_log GROUP BY key ORDER BY key')).rows
      await pool.end()
      expect(counted).toEqual([
        { key: 'invite:account:u1', n: '3' },
        { key: 'invite:team:t1', n: '3' },
      ])
    } finally {
      await a.close()
      await b.close()
      await drop()
    }
  })

  it('an account whose membership cannot be written leaves no user behind', async () => {
    const { schema, drop } = await freshSchema()
    const store = await createPgTeamStore({ connectionString: url!, schema })
    const pool = new pg.Pool({ connectionString: url!, options: `-c search_path=${schema}` })
    try {
      await pool.query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`)
      await pool.query('CREATE TRIGGER refuse BEFORE INSERT ON dashboard_members FOR EACH ROW EXECUTE FUNCTION refuse()')
      await expect(Promise.resolve(store.createAccount({ id: 'u1', email: 'a@x.test', passwordHash: 'h' }, { orgId: 'o', role: 'owner' }, 1))).rejects.toThrow(/injected failure/)
      expect(await store.getUserByEmail('a@x.test')).toBeNull()
      await pool.query('DROP TRIGGER refuse ON dashboard_members')
      expect((await store.createAccount({ id: 'u2', email: 'a@x.test', passwordHash: 'h' }, { orgId: 'o', role: 'owner' }, 2))?.id).toBe('u2')
    } finally {
      await pool.end()
      await store.close()
      await drop()
    }
  })
})
