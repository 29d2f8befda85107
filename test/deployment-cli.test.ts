/**
 * The supported deployments at the command line: SQLite alone, or PostgreSQL + Redis. `serve --redis-url` without
 * PostgreSQL, `serve --no-workers` without the shared queue and `riskcheck worker` without both are refused with
 * exit 64 and a message naming what is supported — from flags and from the environment alike.
 */
import { describe, expect, it } from 'vitest'
import { runServe } from '../src/cli/serve-command.js'
import { runWorker } from '../src/cli/worker-command.js'
import { memoryIO } from './helpers.js'

const SUPPORTED = 'Supported: SQLite alone (--db, the default) or PostgreSQL + Redis (--database-url and --redis-url).'

describe('deployment combinations', () => {
  it.each([
    [['--redis-url', 'redis://127.0.0.1:6379'], {}, '--redis-url needs --database-url'],
    [['--db', 'x.sqlite', '--redis-url', 'redis://127.0.0.1:6379'], {}, '--redis-url needs --database-url'],
    // A value from the environment is named by its variable.
    [[], { REDIS_URL: 'redis://127.0.0.1:6379' }, 'REDIS_URL needs --database-url'],
    [[], { RISKCHECK_REDIS_URL: 'redis://127.0.0.1:6379' }, 'RISKCHECK_REDIS_URL needs --database-url'],
    [['--no-workers'], {}, '--no-workers needs --database-url and --redis-url'],
    [[], { RISKCHECK_NO_WORKERS: '1' }, 'RISKCHECK_NO_WORKERS needs --database-url and --redis-url'],
    [['--redis-url', 'http://127.0.0.1:6379'], {}, '--redis-url must start with redis:// or rediss://'],
  ])('serve %j (env %j) → 64', async (args, env, message) => {
    const io = memoryIO(env)
    expect(await runServe(args, io)).toBe(64)
    expect(io.err()).toContain(`riskcheck serve: ${message}`)
    expect(io.err()).toContain(SUPPORTED)
    expect(io.out()).toBe('')
  })

  it.each([
    [[], {}, '`riskcheck worker` needs --database-url and --redis-url'],
    [['--redis-url', 'redis://127.0.0.1:6379'], {}, '--redis-url needs --database-url'],
    [['--database-url', 'postgres://127.0.0.1/test'], {}, '--database-url needs --redis-url'],
    [[], { DATABASE_URL: 'postgres://127.0.0.1/test' }, '--database-url needs --redis-url'],
    [['--db', 'x.sqlite', '--database-url', 'postgres://h/db', '--redis-url', 'redis://h'], {}, '--db and --database-url exclude each other'],
    [['--database-url', 'mysql://h/db', '--redis-url', 'redis://h'], {}, '--database-url must start with postgres://'],
  ])('worker %j (env %j) → 64', async (args, env, message) => {
    const io = memoryIO(env)
    expect(await runWorker(args, io)).toBe(64)
    expect(io.err()).toContain(`riskcheck worker: ${message}`)
    expect(io.err()).toContain(SUPPORTED)
  })

  it('worker --help names the flags and their variables', async () => {
    const io = memoryIO()
    expect(await runWorker(['--help'], io)).toBe(0)
    for (const s of ['--database-url', 'DATABASE_URL', '--redis-url', 'REDIS_URL', 'riskcheck serve --no-workers', '--queue-lock-timeout', 'RISKCHECK_QUEUE_LOCK_TIMEOUT', '--unsafe-allow-loopback-webhooks']) expect(io.out()).toContain(s)
  })

  it('serve --help documents --redis-url and --no-workers', async () => {
    const io = memoryIO()
    expect(await runServe(['--help'], io)).toBe(0)
    for (const s of ['--redis-url URL', 'REDIS_URL', '--no-workers', 'RISKCHECK_NO_WORKERS=1', 'PostgreSQL + Redis', '--queue-lock-timeout', 'RISKCHECK_QUEUE_LOCK_TIMEOUT']) expect(io.out()).toContain(s)
  })

  it.each([
    [runServe, 'serve', ['--db', 'x.sqlite', '--queue-lock-timeout', '5s'], {}, '--queue-lock-timeout is for the shared queue (--redis-url)'],
    [runServe, 'serve', ['--database-url', 'postgres://h/db', '--redis-url', 'redis://h', '--queue-lock-timeout', '500ms'], {}, '--queue-lock-timeout must be a duration of at least 1s'],
    [runServe, 'serve', ['--database-url', 'postgres://h/db', '--redis-url', 'redis://h'], { RISKCHECK_QUEUE_LOCK_TIMEOUT: 'soon' }, 'RISKCHECK_QUEUE_LOCK_TIMEOUT must be a duration'],
    [runWorker, 'worker', ['--database-url', 'postgres://h/db', '--redis-url', 'redis://h', '--queue-lock-timeout', '0s'], {}, '--queue-lock-timeout must be a duration of at least 1s'],
  ] as const)('%#: a bad --queue-lock-timeout → 64', async (run, name, args, env, message) => {
    const io = memoryIO(env)
    expect(await run([...args], io)).toBe(64)
    expect(io.err()).toContain(`riskcheck ${name}: ${message}`)
  })
})
