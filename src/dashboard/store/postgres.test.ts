/**
 * The TeamStore contract on PostgreSQL. Needs RISKCHECK_TEST_DATABASE_URL (e.g.
 * postgres://postgres@127.0.0.1:5432/test); every case gets a fresh schema of its own, dropped afterwards.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { teamStoreContract } from './contract.js'
import { createPgTeamStore, migratePgDashboard, PG_DASHBOARD_MIGRATIONS } from './postgres.js'

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

describe.skipIf(!url)('TeamStore on PostgreSQL', () => {
  teamStoreContract(async () => {
    const { schema, drop } = await freshSchema()
    const store = await createPgTeamStore({ connectionString: url!, schema })
    return {
      store,
      async done() {
        await store.close()
        await drop()
      },
    }
  })

  it('migrates once even when several servers start at the same time', async () => {
    const { schema, drop } = await freshSchema()
    const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: url!, options: `-c search_path=${schema}` }))
    try {
      await pools[0]!.query(`CREATE SCHEMA ${schema}`)
      const results = await Promise.all(pools.map((p) => migratePgDashboard(p, 7)))
      expect(results.flat()).toEqual(PG_DASHBOARD_MIGRATIONS.map((m) => m.version))
      expect((await pools[0]!.query('SELECT version FROM dashboard_migrations')).rows).toEqual(PG_DASHBOARD_MIGRATIONS.map((m) => ({ version: m.version })))
    } finally {
      await Promise.all(pools.map((p) => p.end()))
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
})
