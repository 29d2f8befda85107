/**
 * The harness of the scale-out suites: `riskcheck serve` and `riskcheck worker` child processes (through tsx, no
 * build needed) on one PostgreSQL schema and one Redis key prefix of the suite's own, both removed after. Needs
 * RISKCHECK_TEST_DATABASE_URL and RISKCHECK_TEST_REDIS_URL (`.ci/run` sets both); without them `enabled` is false and
 * a note says how to run the suite.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Scope } from '../src/schema.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { createPostgresStore, type PostgresStore } from '../src/server/store/postgres/store.js'
import { deleteKeys, testRedis, testRedisUrl } from './redis-env.js'
import { nodeArgs } from './child-process.js'

/** A running `serve` (with its URL) or `worker` process. */
export interface Instance {
  child: ChildProcess
  /** The API base URL; a worker's metrics URL (with --metrics-port), else ''. */
  url: string
  /** Its stderr so far (the log). */
  err: () => string
}

/** One suite's PostgreSQL schema and Redis prefix, and the processes started on them. */
export interface ScaleOut {
  readonly enabled: boolean
  readonly databaseUrl: string
  readonly redisUrl: string
  readonly schema: string
  readonly redisPrefix: string
  /** The suite's own store on the schema (after `open`). */
  readonly store: PostgresStore
  /** A pool on the schema, for counting rows. */
  readonly sql: pg.Pool
  /** Creates the schema (migrated) and the pool. */
  open(): Promise<void>
  /** Starts `riskcheck serve` (offline, JSON address, warn logs) with extra flags; resolves once it listens. */
  serve(args?: string[]): Promise<Instance>
  /** Starts `riskcheck worker` with extra flags; resolves once it runs. */
  worker(args?: string[]): Promise<Instance>
  /** SIGKILLs a process (no drain: as a lost machine) and waits for it to be gone. */
  kill(i: Instance): Promise<void>
  /** SIGTERMs every process still running and waits; drops the schema and deletes the Redis keys. */
  close(): Promise<void>
  /** An org with `credits` subscription credits and `rate` requests a second, and a live key of it (default scopes unless `scopes`). */
  orgWithKey(credits: number, rate?: number, scopes?: Scope[]): Promise<{ orgId: string; secret: string; keyId: string }>
}

/** The harness of a suite named `suite` (its skip note names it). */
export function scaleOut(suite: string): ScaleOut {
  const databaseUrl = process.env.RISKCHECK_TEST_DATABASE_URL
  if (!databaseUrl) console.log(`[skipped] ${suite}: needs PostgreSQL. Run it with RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test (or .ci/run).`)
  const redisUrl = testRedisUrl(suite)
  const schema = `rc_scale_${randomBytes(5).toString('hex')}`
  const redisPrefix = `rc-scale-${randomBytes(5).toString('hex')}`
  const children = new Set<Instance>()
  let store: PostgresStore | undefined
  let sql: pg.Pool | undefined

  /** The database URL the processes get: the schema through the connection's search_path. */
  const instanceDbUrl = () => {
    const u = new URL(databaseUrl!)
    u.searchParams.set('options', `-c search_path=${schema}`)
    return u.toString()
  }

  function start(command: 'serve' | 'worker', args: string[], ready: (out: string) => string | null): Promise<Instance> {
    const base = command === 'serve' ? ['serve', '--port', '0', '--json'] : ['worker']
    const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), ...base, '--offline', '--log-level', 'warn', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // a start on a loaded machine may wait longer than the default 5 s for its first connection; a flag given wins
      env: { ...process.env, RISKCHECK_DATABASE_URL: instanceDbUrl(), RISKCHECK_REDIS_URL: redisUrl!, RISKCHECK_REDIS_PREFIX: redisPrefix, RISKCHECK_DATABASE_TIMEOUT: '30s' },
    })
    let out = ''
    let err = ''
    child.stderr!.on('data', (d) => (err += d))
    return new Promise((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        out += d
        const url = ready(out)
        if (url === null) return
        const instance = { child, url, err: () => err }
        children.add(instance)
        child.once('close', () => children.delete(instance))
        resolve(instance)
      })
      child.on('close', (code) => reject(new Error(`${command} exited ${code} before it ran: ${err}`)))
    })
  }

  return {
    enabled: Boolean(databaseUrl && redisUrl),
    databaseUrl: databaseUrl ?? '',
    redisUrl: redisUrl ?? '',
    schema,
    redisPrefix,
    get store() {
      return store!
    },
    get sql() {
      return sql!
    },
    async open() {
      store = await createPostgresStore({ connectionString: databaseUrl!, schema })
      sql = new pg.Pool({ connectionString: instanceDbUrl(), max: 2 })
    },
    serve: (args = []) =>
      start('serve', args, (out) => {
        const line = out.split('\n').find((l) => l.startsWith('{'))
        return line ? (JSON.parse(line) as { url: string }).url : null
      }),
    worker: (args = []) => start('worker', args, (out) => (/riskcheck worker running.*\n/.test(out) ? (/; metrics on (\S+)/.exec(out)?.[1] ?? '') : null)),
    async kill(i) {
      if (i.child.exitCode !== null || i.child.signalCode !== null) return
      const gone = new Promise((resolve) => i.child.once('close', resolve))
      i.child.kill('SIGKILL')
      await gone
    },
    async close() {
      await Promise.all(
        [...children].map(async (i) => {
          const gone = new Promise((resolve) => i.child.once('close', resolve))
          i.child.kill('SIGTERM')
          await gone
        }),
      )
      await store?.close()
      await sql?.end()
      if (!databaseUrl || !redisUrl) return
      const admin = new pg.Pool({ connectionString: databaseUrl })
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
      const redis = testRedis(redisUrl)
      await deleteKeys(redis, `${redisPrefix}:`)
      redis.disconnect()
    },
    async orgWithKey(credits, rate = 10_000, scopes) {
      const now = Date.now()
      const org = await store!.createOrg({ name: 'Scale', planId: 'scale' }, now)
      await store!.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: credits, ratePerSecond: rate }, now)
      const { secret, key } = await issueApiKey(store!, { orgId: org.id, ...(scopes ? { scopes } : {}) }, now)
      return { orgId: org.id, secret, keyId: key.id }
    },
  }
}

/** A JSON request with the key's Bearer token. */
export async function call<T = unknown>(base: string, secret: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T }
}

/** Polls `probe` every `everyMs` until it returns a value other than undefined (the test's timeout bounds it). */
export async function until<T>(probe: () => Promise<T | undefined>, everyMs = 200): Promise<T> {
  for (;;) {
    const v = await probe()
    if (v !== undefined) return v
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
