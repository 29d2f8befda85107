/**
 * Bulk jobs through BullMQ on a real Redis, with every instance on one SQLite file (in this process, and one worker
 * in a child process; through the store interface the PostgreSQL store implements too): a job created on an API-only instance (`serve --no-workers`) runs on
 * a worker; that worker stops mid-run and another finishes the job — every unique input exactly once, credits exact;
 * the same with the first worker a separate process SIGKILLed mid-job;
 * a job cancelled on the API instance while a worker runs it is cancelled by that worker, refunded once.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import { MOBILE_RECORD } from './children/slow-carrier.js'
import { fakeClock } from './clock.js'
import { deleteKeys, testRedis, testRedisUrl, uniquePrefix } from './redis-env.js'
import { nodeArgs } from './child-process.js'

const url = testRedisUrl('bulk jobs through BullMQ (test/redis-bulk-queue.test.ts)')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.skipIf(!url)('bulk jobs through BullMQ', () => {
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bulk-queue-'))
  const prefix = uniquePrefix().replace(/:$/, '')
  const clock = fakeClock('2026-11-22T00:00:00Z')
  const carrierCalls = new Map<string, number>()
  let redis: Redis
  let store: SqliteStore
  /** A server on the shared store; `lockMs` short where a dead worker's job must be recovered quickly. */
  const open = (workers: boolean, lockMs = 1000): RiskcheckServer =>
    createServer({
      db: store,
      purgeIntervalMs: 0,
      webhookIntervalMs: 0,
      bulkConcurrency: 4,
      queue: { redisUrl: url as string, prefix, workers, worker: { lockDuration: lockMs, stalledInterval: 250 } },
      riskcheck: {
        now: clock.now,
        cache: false,
        phone: {
          carrierSource: {
            name: 'slow-carrier',
            async lookup(e164) {
              carrierCalls.set(e164, (carrierCalls.get(e164) ?? 0) + 1)
              await sleep(3)
              return MOBILE_RECORD
            },
          },
        },
      },
    })

  beforeAll(() => {
    redis = testRedis(url as string)
    store = createSqliteStore(join(dir, 'rc.sqlite'))
  })

  afterAll(async () => {
    store?.close()
    rmSync(dir, { recursive: true, force: true })
    if (redis) {
      await deleteKeys(redis, `${prefix}:`)
      await redis.quit()
    }
  })

  type Call = Awaited<ReturnType<typeof account>>

  /** Every result row of a finished job, page by page. */
  async function allRows(call: Call, app: RiskcheckServer, id: string): Promise<Array<{ input: string; credits_used: number }>> {
    const rows: Array<{ input: string; credits_used: number }> = []
    let cursor: string | null = null
    do {
      const page = await call(app, 'GET', `/v1/bulk/jobs/${id}/results?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)
      rows.push(...page.body.data)
      cursor = page.body.next_cursor
    } while (cursor)
    return rows
  }

  async function account(credits: number) {
    const now = clock.now().getTime()
    const org = await store.createOrg({ name: 'Scaled', planId: 'free' }, now)
    await store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: credits, ratePerSecond: 100_000 }, now)
    const key = (await issueApiKey(store, { orgId: org.id }, now)).secret
    return async (app: RiskcheckServer, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => {
      const r = await app.inject({
        method,
        url: path,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      })
      return { status: r.statusCode, body: JSON.parse(r.body) }
    }
  }

  it('a worker stops mid-job: another worker finishes it, no row lost or written twice, credits exact', async () => {
    const call = await account(5000)
    // Two workers live at once here: a lock long enough that a busy machine never lets the second take the job
    // from a first that is still running it (the handover here is the message the first gives back).
    const api = open(false)
    const first = open(true, 10_000)
    await Promise.all([api.ready(), first.ready()])
    // Readiness includes Redis.
    const ready = await api.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect(JSON.parse(ready.body).checks).toContainEqual(expect.objectContaining({ name: 'redis', ok: true }))
    const inputs = Array.from({ length: 1000 }, (_, i) => `+1201555${String(i).padStart(4, '0')}`)
    inputs.push('not a phone', inputs[0] as string)
    const created = await call(api, 'POST', '/v1/bulk/jobs', { type: 'phone', inputs })
    expect(created.status).toBe(202)
    const id = created.body.data.id as string
    expect(created.body.data.unique_inputs).toBe(1001)
    expect((await call(api, 'GET', '/v1/account')).body.data.credits.total_available).toBe(5000 - 1001)

    // The API instance runs nothing itself: the first worker takes the job.
    let before: any
    for (let i = 0; i < 1000; i++) {
      before = (await call(api, 'GET', `/v1/bulk/jobs/${id}`)).body.data
      if (before.processed >= 150) break
      await sleep(10)
    }
    expect(before.status).toBe('running')
    expect(before.processed).toBeLessThan(1001)
    // The API instance shows the rows the worker has written so far, in input order.
    const partial = await call(api, 'GET', `/v1/bulk/jobs/${id}/results?limit=1000`)
    expect(partial.body.data.length).toBeGreaterThan(0)
    expect(partial.body.data.map((r: { input: string }) => r.input)).toEqual(inputs.slice(0, partial.body.data.length))
    expect(partial.body.next_cursor).not.toBeNull()
    const second = open(true, 10_000)
    await second.ready()
    await first.close() // writes what it did, gives the message back
    const callsAtClose = carrierCalls.size

    let job: any
    for (let i = 0; i < 2000; i++) {
      job = (await call(api, 'GET', `/v1/bulk/jobs/${id}`)).body.data
      if (job.status === 'completed') break
      await sleep(10)
    }
    expect(job.status).toBe('completed')
    expect(job.processed).toBe(1001)
    expect(carrierCalls.size).toBeGreaterThan(callsAtClose)

    const rows = await allRows(call, api, id)
    expect(rows.map((r) => r.input)).toEqual(inputs.slice(0, 1001))
    expect(rows.reduce((a, r) => a + r.credits_used, 0)).toBe(1000)
    expect(job.credits_used).toBe(1000)
    const acct = (await call(api, 'GET', '/v1/account')).body.data
    expect(acct.credits.total_available).toBe(5000 - 1000)
    expect(acct.usage.period.credits).toBe(1000)
    await Promise.all([api.close(), second.close()])
    // Nothing left in the queue.
    const counts = await redis.keys(`${prefix}:bulk-jobs:*`)
    expect(counts.filter((k) => k.endsWith(`:${id}`))).toEqual([])
  })

  it('a worker process SIGKILLed mid-job: a worker in another process finishes it, rows once, credits exact', async () => {
    const call = await account(5000)
    const api = open(false)
    await api.ready()
    const child = spawn(process.execPath, [...nodeArgs('test/children/bulk-worker.ts'), join(dir, 'rc.sqlite'), url as string, prefix], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout?.on('data', (c: Buffer) => c.toString().includes('ready') && resolve())
        child.once('exit', (code) => reject(new Error(`the worker process exited (${code})`)))
      })
      const inputs = Array.from({ length: 1000 }, (_, i) => `+1201557${String(i).padStart(4, '0')}`)
      const id = (await call(api, 'POST', '/v1/bulk/jobs', { type: 'phone', inputs })).body.data.id as string
      let before: any
      for (let i = 0; i < 2000; i++) {
        before = (await call(api, 'GET', `/v1/bulk/jobs/${id}`)).body.data
        if (before.processed >= 150) break
        await sleep(10)
      }
      expect(before.status).toBe('running')
      child.kill('SIGKILL')
      await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)))
      const killedAt = (await call(api, 'GET', `/v1/bulk/jobs/${id}`)).body.data
      expect(killedAt.status).toBe('running')
      expect(killedAt.processed).toBeLessThan(1000)

      const survivor = open(true) // gets the job through BullMQ's stalled-job check
      await survivor.ready()
      let job: any
      for (let i = 0; i < 3000; i++) {
        job = (await call(api, 'GET', `/v1/bulk/jobs/${id}`)).body.data
        if (job.status === 'completed') break
        await sleep(10)
      }
      expect(job.status).toBe('completed')
      expect(job.processed).toBe(1000)
      const rows = await allRows(call, api, id)
      expect(rows.map((r) => r.input)).toEqual(inputs)
      expect(rows.reduce((a, r) => a + r.credits_used, 0)).toBe(1000)
      expect(job.credits_used).toBe(1000)
      const acct = (await call(api, 'GET', '/v1/account')).body.data
      expect(acct.credits.total_available).toBe(5000 - 1000)
      expect(acct.usage.period.credits).toBe(1000)
      await survivor.close()
    } finally {
      child.kill('SIGKILL')
      await api.close()
    }
  })

  it('a job cancelled on an API instance while a worker runs it: cancelled by the worker, refunded once', async () => {
    const call = await account(3000)
    const api = open(false)
    const worker = open(true)
    await Promise.all([api.ready(), worker.ready()])
    const inputs = Array.from({ length: 2000 }, (_, i) => `+1201556${String(i).padStart(4, '0')}`)
    const id = (await call(api, 'POST', '/v1/bulk/jobs', { type: 'phone', inputs })).body.data.id as string
    for (let i = 0; i < 1000; i++) {
      const j = (await call(api, 'GET', `/v1/bulk/jobs/${id}`)).body.data
      if (j.processed >= 50) break
      await sleep(10)
    }
    const cancelled = await call(api, 'DELETE', `/v1/bulk/jobs/${id}`)
    expect(cancelled.status).toBe(200)
    expect(cancelled.body.data.status).toBe('cancelled')
    const used = cancelled.body.data.credits_used as number
    expect(used).toBeGreaterThan(0)
    expect(used).toBeLessThan(2000)
    await sleep(100) // late answers of the worker are neither written nor charged
    expect((await call(api, 'GET', `/v1/bulk/jobs/${id}`)).body.data).toEqual(cancelled.body.data)
    expect((await call(api, 'GET', '/v1/account')).body.data.credits.total_available).toBe(3000 - used)
    await Promise.all([api.close(), worker.close()])
  })
})
