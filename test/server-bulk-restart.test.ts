/**
 * A bulk job running when the server stops resumes after a restart on the same database file: every unique input
 * ends with exactly one row, nothing is charged twice, and the unused reservation is refunded by the new process.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import type { LiveCarrierRecord } from '../src/sources/phone/carrier-source.js'
import { fakeClock } from './clock.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bulk-restart-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const record: LiveCarrierRecord = {
  lineType: 'mobile',
  carrierType: 'mobile',
  carrierName: 'Example Wireless',
  ocn: null,
  mcc: null,
  mnc: null,
  ported: false,
  originalCarrier: null,
  lrn: null,
  lata: null,
  rateCenter: null,
}

describe('restart during a running bulk job', () => {
  it('resumes where it was: no lost rows, no double charge', async () => {
    const file = join(dir, 'rc.sqlite')
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const carrierCalls = new Map<string, number>()
    const open = () =>
      createServer({
        db: file,
        purgeIntervalMs: 0,
        webhookIntervalMs: 0,
        bulkConcurrency: 4,
        riskcheck: {
          now: clock.now,
          cache: false,
          phone: {
            carrierSource: {
              name: 'slow-carrier',
              async lookup(e164) {
                carrierCalls.set(e164, (carrierCalls.get(e164) ?? 0) + 1)
                await sleep(4)
                return record
              },
            },
          },
        },
      })
    let app: RiskcheckServer = open()
    await app.ready()
    const now = clock.now().getTime()
    const org = await app.store.createOrg({ name: 'Resume', planId: 'free' }, now)
    await app.store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: 5000, ratePerSecond: 100_000 }, now)
    const key = (await issueApiKey(app.store, { orgId: org.id }, now)).secret
    const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
      const r = await app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      })
      return { status: r.statusCode, body: JSON.parse(r.body) }
    }

    const inputs = Array.from({ length: 1200 }, (_, i) => `+1201555${String(i).padStart(4, '0')}`)
    inputs.push('not a phone', inputs[0]!) // an error row (free) and a duplicate (folded)
    const created = await call('POST', '/v1/bulk/jobs', { type: 'phone', inputs })
    expect(created.status).toBe(202)
    const id = created.body.data.id as string
    const unique = created.body.data.unique_inputs as number
    expect(unique).toBe(1201)
    // One credit reserved per unique input (the invalid one is refunded when it turns out free).
    expect((await call('GET', '/v1/account')).body.data.credits.total_available).toBe(5000 - 1201)

    // Let it run a while, then stop the process mid-job.
    let before: any
    for (let i = 0; i < 500; i++) {
      before = (await call('GET', `/v1/bulk/jobs/${id}`)).body.data
      if (before.processed >= 200) break
      await sleep(10)
    }
    expect(before.status).toBe('running')
    expect(before.processed).toBeLessThan(unique)
    await app.close()
    const callsAtClose = carrierCalls.size

    // While stopped: the job stays running in the database, nothing refunded yet.
    app = open()
    await app.ready()
    const resumedAt = (await call('GET', `/v1/bulk/jobs/${id}`)).body.data
    expect(resumedAt.processed).toBeGreaterThanOrEqual(before.processed)
    expect(resumedAt.processed).toBeLessThan(unique)

    let job: any
    for (let i = 0; i < 1000; i++) {
      job = (await call('GET', `/v1/bulk/jobs/${id}`)).body.data
      if (job.status === 'completed') break
      await sleep(10)
    }
    expect(job.status).toBe('completed')
    expect(job.processed).toBe(unique)
    expect(carrierCalls.size).toBeGreaterThan(callsAtClose)

    // Every unique input exactly once, in input order.
    const rows: Array<{ input: string; credits_used: number; error: string | null }> = []
    let cursor: string | null = null
    do {
      const page = await call('GET', `/v1/bulk/jobs/${id}/results?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)
      rows.push(...page.body.data)
      cursor = page.body.next_cursor
    } while (cursor)
    expect(rows.map((r) => r.input)).toEqual(inputs.slice(0, 1201))
    // No double charge: the balance went down by exactly the credits of the rows, once each.
    const charged = rows.reduce((a, r) => a + r.credits_used, 0)
    expect(charged).toBe(job.credits_used)
    expect(job.credits_used).toBe(1200)
    const acct = (await call('GET', '/v1/account')).body.data
    expect(acct.credits.total_available).toBe(5000 - job.credits_used)
    expect(acct.usage.period.credits).toBe(job.credits_used)
    // The reservation bookkeeping is settled (what was not used went back; nothing is left to refund twice).
    await app.close()
    app = open()
    await app.ready()
    expect((await call('GET', '/v1/account')).body.data.credits.total_available).toBe(5000 - 1200)
    expect((await call('GET', `/v1/bulk/jobs/${id}`)).body.data).toEqual(job)
    await app.close()
  })

  it('a job cancelled after a restart refunds what the first process reserved', async () => {
    const file = join(dir, 'cancel.sqlite')
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const open = (resumeSlow: boolean) =>
      createServer({
        db: file,
        purgeIntervalMs: 0,
        webhookIntervalMs: 0,
        bulkConcurrency: 2,
        riskcheck: {
          now: clock.now,
          cache: false,
          phone: { carrierSource: { name: 'slow', lookup: async () => (await sleep(resumeSlow ? 30 : 10), record) } },
        },
      })
    let app = open(false)
    await app.ready()
    const now = clock.now().getTime()
    const org = await app.store.createOrg({ name: 'Cancel', planId: 'free' }, now)
    await app.store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: 1000, ratePerSecond: 100_000 }, now)
    await app.store.addCredits(org.id, 500, 'top_up', now)
    const key = (await issueApiKey(app.store, { orgId: org.id }, now)).secret
    const inject = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
      app
        .inject({
          method,
          url,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { payload: JSON.stringify(body) } : {}),
        })
        .then((r) => JSON.parse(r.body))
    const inputs = Array.from({ length: 1400 }, (_, i) => `+1201555${String(i).padStart(4, '0')}`)
    const id = (await inject('POST', '/v1/bulk/jobs', { type: 'phone', inputs })).data.id
    // 1400 reserved: the 1000 subscription credits first, then 400 purchased.
    expect((await inject('GET', '/v1/account')).data.credits).toEqual({ subscription: 0, purchased: 100, total_available: 100 })
    await sleep(60)
    await app.close()
    app = open(true)
    await app.ready()
    const cancelled = (await inject('DELETE', `/v1/bulk/jobs/${id}`)).data
    expect(cancelled.status).toBe('cancelled')
    expect(cancelled.processed).toBeLessThan(1400)
    const credits = (await inject('GET', '/v1/account')).data.credits
    expect(credits.total_available).toBe(1500 - cancelled.credits_used)
    // Purchased credits come back first.
    expect(credits.purchased).toBe(Math.min(500, 100 + (1400 - cancelled.credits_used)))
    await app.close()
  })
})
