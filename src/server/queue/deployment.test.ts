import { describe, expect, it } from 'vitest'
import { resolveDeployment } from './deployment.js'

const PG = 'postgres://postgres@127.0.0.1:5432/test'
const REDIS = 'redis://127.0.0.1:6379'

describe('resolveDeployment', () => {
  it('SQLite alone runs API and workers in one process', () => {
    expect(resolveDeployment({ workers: true })).toEqual({ ok: true, deployment: { mode: 'sqlite', db: undefined, api: true, workers: true } })
    expect(resolveDeployment({ db: 'x.sqlite', workers: true })).toMatchObject({ ok: true, deployment: { mode: 'sqlite', db: 'x.sqlite' } })
  })

  it('PostgreSQL + Redis: serve, serve --no-workers, worker', () => {
    expect(resolveDeployment({ databaseUrl: PG, redisUrl: REDIS, workers: true })).toEqual({
      ok: true,
      deployment: { mode: 'scaled', databaseUrl: PG, redisUrl: REDIS, api: true, workers: true },
    })
    expect(resolveDeployment({ databaseUrl: PG, redisUrl: 'rediss://r.example:6380', workers: false })).toMatchObject({
      ok: true,
      deployment: { api: true, workers: false },
    })
    expect(resolveDeployment({ databaseUrl: 'postgresql://h/db', redisUrl: REDIS, workers: true, api: false })).toMatchObject({
      ok: true,
      deployment: { api: false, workers: true },
    })
  })

  it.each([
    [{ redisUrl: REDIS, workers: true }, '--redis-url needs --database-url'],
    [{ db: 'x.sqlite', redisUrl: REDIS, workers: true }, '--redis-url needs --database-url'],
    [{ databaseUrl: PG, workers: true }, '--database-url needs --redis-url'],
    [{ db: 'x.sqlite', databaseUrl: PG, redisUrl: REDIS, workers: true }, '--db and --database-url exclude each other'],
    [{ workers: false }, '--no-workers needs --database-url and --redis-url'],
    [{ workers: true, api: false }, '`riskcheck worker` needs --database-url and --redis-url'],
    [{ databaseUrl: PG, redisUrl: REDIS, workers: false, api: false }, 'nothing to run'],
    [{ databaseUrl: 'mysql://h/db', redisUrl: REDIS, workers: true }, '--database-url must start with postgres:// or postgresql://'],
    [{ databaseUrl: PG, redisUrl: 'not a url', workers: true }, '--redis-url is not a URL'],
  ])('refuses %j', (settings, message) => {
    const r = resolveDeployment(settings)
    expect(r.ok).toBe(false)
    if (!r.ok) {
      expect(r.error).toContain(message)
      expect(r.error).toContain('Supported: SQLite alone (--db, the default) or PostgreSQL + Redis')
    }
  })
})
