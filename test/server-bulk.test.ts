/**
 * Bulk jobs over HTTP: 202 create with credits reserved through the org's ledger (402 and nothing started when
 * short), a 100,000-input body accepted on this route only, paging with cursor/limit/action, the streamed CSV,
 * cancel and retry, isolation between orgs (and between live and test keys), the 7-day retention sweep, and the
 * documented shapes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BulkJobSchema, BulkResultRowSchema, ErrorEnvelopeSchema } from '../src/schema.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { encodePageCursor } from '../src/server/page-cursor.js'
import type { SqliteStore } from '../src/server/store/sqlite/store.js'
import { startTestServer, type TestServer } from './server-helpers.js'
import { schemaErrors } from './validate.js'

let s: TestServer

/** A test server whose keys are not rate limited (these tests poll). */
async function start(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const t = await startTestServer({ webhookIntervalMs: 0, testKeyRatePerSecond: 1_000_000, ...options })
  await t.app.store.setOrgPlan(t.org.id, { planId: 'starter', ratePerSecond: 1_000_000 }, t.clock.now().getTime())
  return t
}

beforeAll(async () => {
  s = await start()
})
afterAll(() => s.close())

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function waitDone(id: string, key = s.live) {
  for (let i = 0; i < 400; i++) {
    const r = await s.get(`/v1/bulk/jobs/${id}`, key)
    if (['completed', 'cancelled', 'failed'].includes(r.body.data.status)) return r.body.data
    await sleep(10)
  }
  throw new Error(`job ${id} did not finish`)
}

async function orgWith(credits: number) {
  const now = s.clock.now().getTime()
  const org = await s.app.store.createOrg({ name: `org-${credits}`, planId: 'free' }, now)
  await s.app.store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: credits, ratePerSecond: 10_000 }, now)
  const live = await issueApiKey(s.app.store, { orgId: org.id }, now)
  const test = await issueApiKey(s.app.store, { orgId: org.id, mode: 'test' }, now)
  return { org, live: live.secret, test: test.secret }
}

const balance = async (key: string) => (await s.get('/v1/account', key)).body.data.credits.total_available as number

const phones = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `+1201555${String(1000 + from + i).padStart(4, '0')}`)

describe('POST /v1/bulk/jobs', () => {
  it('202 with the job object; folds duplicates and blanks; reserves one credit per unique input, refunds what was not used', async () => {
    const o = await orgWith(100)
    const inputs = ['+12015550100', '+1 201 555 0100', '', '   ', '+442079460000', 'not a number', '+12015550101']
    const r = await s.post('/v1/bulk/jobs', { type: 'phone', inputs, name: 'March leads', country: 'us' }, o.live)
    expect(r.status, r.raw).toBe(202)
    expect(schemaErrors(BulkJobSchema, r.body.data)).toEqual([])
    expect(r.body.data).toMatchObject({ name: 'March leads', type: 'phone', status: 'queued', total_rows: 7 })
    expect(r.body.data.results.skipped).toBe(3) // one duplicate, two blanks
    const unique = r.body.data.unique_inputs as number
    expect(unique).toBe(4)
    // Reserved at start: one per unique input that can be run.
    expect(await balance(o.live)).toBeLessThanOrEqual(100 - 3)
    const done = await waitDone(r.body.data.id, o.live)
    expect(done.status).toBe('completed')
    expect(done.processed).toBe(unique)
    expect(done.completed_at).not.toBeNull()
    // Invalid numbers are free: after the job, exactly credits_used are gone.
    expect(await balance(o.live)).toBe(100 - done.credits_used)
    const rows = (await s.get(`/v1/bulk/jobs/${done.id}/results`, o.live)).body.data
    expect(rows.reduce((a: number, x: { credits_used: number }) => a + x.credits_used, 0)).toBe(done.credits_used)
    const acct = (await s.get('/v1/account', o.live)).body.data
    expect(acct.usage.period.credits).toBe(done.credits_used)
    expect(acct.usage.period.lookups).toBe(done.processed - done.results.errors)
  })

  it('402 INSUFFICIENT_CREDITS when the balance cannot cover the unique inputs; nothing starts', async () => {
    const o = await orgWith(3)
    const r = await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['8.8.8.8', '1.1.1.1', '9.9.9.9', '8.8.4.4'] }, o.live)
    expect(r.status).toBe(402)
    expect(r.body.error.code).toBe('INSUFFICIENT_CREDITS')
    expect(schemaErrors(ErrorEnvelopeSchema, r.body)).toEqual([])
    expect(await balance(o.live)).toBe(3)
    expect((await s.get('/v1/bulk/jobs', o.live)).body.data).toEqual([])
    // Duplicates are folded before reserving: three unique inputs fit.
    const ok = await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['8.8.8.8', '8.8.8.8', '1.1.1.1', '9.9.9.9'] }, o.live)
    expect(ok.status).toBe(202)
    await waitDone(ok.body.data.id, o.live)
  })

  it('test keys run test answers for free', async () => {
    const o = await orgWith(0)
    const r = await s.post('/v1/bulk/jobs', { type: 'email', inputs: ['disposable@example.com', 'deliverable@example.com'] }, o.test)
    expect(r.status).toBe(202)
    const done = await waitDone(r.body.data.id, o.test)
    expect(done.credits_used).toBe(0)
    expect(done.status).toBe('completed')
  })

  it('accepts a body of 100,000 inputs (this route only); 100,001 → 413 INPUT_LIMIT_EXCEEDED; none → 422 INVALID_INPUT', async () => {
    const inputs = Array.from({ length: 100_000 }, (_, i) => `+1201555${String(1000 + (i % 50)).padStart(4, '0')}`)
    const body = JSON.stringify({ type: 'phone', inputs })
    expect(body.length).toBeGreaterThan(1_000_000)
    const r = await s.post('/v1/bulk/jobs', body, s.test)
    expect(r.status, r.raw.slice(0, 300)).toBe(202)
    expect(r.body.data.total_rows).toBe(100_000)
    expect(r.body.data.unique_inputs).toBe(50)
    await waitDone(r.body.data.id, s.test)
    const over = await s.post('/v1/bulk/jobs', { type: 'phone', inputs: [...inputs, '+12015550100'] }, s.test)
    expect(over.status).toBe(413)
    expect(over.body.error.code).toBe('INPUT_LIMIT_EXCEEDED')
    const none = await s.post('/v1/bulk/jobs', { type: 'phone', inputs: [] }, s.test)
    expect(none.status).toBe(422)
    expect(none.body.error.code).toBe('INVALID_INPUT')
    // The lookups keep their small body limit.
    const big = await s.post('/v1/ip', { ip: '8.8.8.8', pad: 'x'.repeat(70 * 1024) }, s.test)
    expect(big.status).toBe(413)
  })

  it('request errors: missing and unknown fields, bad type, long name, bad country', async () => {
    const bad = async (body: unknown, code: string) => {
      const r = await s.post('/v1/bulk/jobs', body, s.test)
      expect(r.body.error?.code, JSON.stringify(body)).toBe(code)
    }
    await bad({ inputs: ['a'] }, 'MISSING_FIELD')
    await bad({ type: 'email' }, 'MISSING_FIELD')
    await bad({ type: 'fax', inputs: ['a'] }, 'INVALID_REQUEST')
    await bad({ type: 'email', inputs: ['a'], extra: 1 }, 'INVALID_REQUEST')
    await bad({ type: 'email', inputs: [1] }, 'INVALID_REQUEST')
    await bad({ type: 'email', inputs: ['a'], name: 'x'.repeat(201) }, 'INVALID_REQUEST')
    await bad({ type: 'phone', inputs: ['a'], country: 'USA' }, 'INVALID_REQUEST')
    const noScope = await issueApiKey(s.app.store, { orgId: s.org.id, mode: 'test', scopes: ['lookup'] }, s.clock.now().getTime())
    expect((await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['8.8.8.8'] }, noScope.secret)).body.error.code).toBe('FORBIDDEN_SCOPE')
    expect((await s.get('/v1/bulk/jobs', null)).body.error.code).toBe('UNAUTHORIZED')
  })
})

describe('results, CSV, list, cancel, retry', () => {
  let id: string
  let job: any
  const inputs = [...phones(230), 'garbage', '+999', '+442079460000']

  beforeAll(async () => {
    const r = await s.post('/v1/bulk/jobs', { type: 'phone', inputs }, s.test)
    id = r.body.data.id
    job = await waitDone(id, s.test)
  })

  it('pages through every row in input order; default limit 100; limit 1 to 1000', async () => {
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const r = await s.get(`/v1/bulk/jobs/${id}/results${cursor ? `?cursor=${cursor}` : ''}`, s.test)
      expect(r.status).toBe(200)
      expect(r.body.success).toBe(true)
      for (const row of r.body.data) expect(schemaErrors(BulkResultRowSchema, row)).toEqual([])
      expect(r.body.data.length).toBeLessThanOrEqual(100)
      seen.push(...r.body.data.map((x: { input: string }) => x.input))
      cursor = r.body.next_cursor
      pages++
    } while (cursor)
    expect(pages).toBe(3)
    expect(seen).toEqual(inputs)
    expect(seen).toHaveLength(job.unique_inputs)
    const big = await s.get(`/v1/bulk/jobs/${id}/results?limit=1000`, s.test)
    expect(big.body.data).toHaveLength(inputs.length)
    expect(big.body.next_cursor).toBeNull()
    expect((await s.get(`/v1/bulk/jobs/${id}/results?limit=1001`, s.test)).body.error.code).toBe('INVALID_REQUEST')
    expect((await s.get(`/v1/bulk/jobs/${id}/results?limit=0`, s.test)).body.error.code).toBe('INVALID_REQUEST')
    // one rule for numbers in a query on every route: plain decimal, no leading zero (they were taken here, refused on reviews)
    for (const url of [`/v1/bulk/jobs/${id}/results?limit=01`, `/v1/bulk/jobs/${id}/results?limit=0000010`, '/v1/bulk/jobs?limit=01', '/v1/bulk/jobs?limit=+5']) {
      const r = await s.get(url, s.test)
      expect(r.status, url).toBe(400)
      expect(r.body.error.message, url).toMatch(/^`limit` must be a whole number from 1 to (100|1000)\.$/)
    }
    expect((await s.get(`/v1/bulk/jobs/${id}/results?limit=1001`, s.test)).body.error.message).toBe('`limit` must be a whole number from 1 to 1000.')
    expect((await s.get(`/v1/bulk/jobs/${id}/results?limit=10`, s.test)).body.data).toHaveLength(10)
    expect((await s.get(`/v1/bulk/jobs/${id}/results?cursor=nonsense!`, s.test)).body.error.code).toBe('INVALID_REQUEST')
  })

  it('takes only a cursor of the form the pages give; any other is one message, on every paged route', async () => {
    const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url')
    const page = await s.get(`/v1/bulk/jobs/${id}/results?limit=10`, s.test)
    expect(page.body.next_cursor).toBe(b64(`r1|${id}|10|`))
    // the row index written otherwise than the pages write it, the tag alone, another job's, text that is no cursor
    const forged = [b64(`r1|${id}|010|`), b64(`r1|${id}|10|maybe`), b64('r1'), b64(`r1|bulk_other|10|`), 'nonsense!']
    const results = await Promise.all(forged.map((c) => s.get(`/v1/bulk/jobs/${id}/results?cursor=${c}`, s.test)))
    const lists = await Promise.all([b64('j1|007'), b64('j1'), b64('j1|1'), 'abc'].map((c) => s.get(`/v1/bulk/jobs?cursor=${c}`, s.test)))
    for (const r of [...results, ...lists]) {
      expect(r.status, r.raw).toBe(400)
      expect(r.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
    }
  })

  it('filters by action (with paging)', async () => {
    const all = (await s.get(`/v1/bulk/jobs/${id}/results?limit=1000`, s.test)).body.data as Array<{ action: string | null; input: string }>
    for (const action of ['approve', 'verify', 'review', 'block'] as const) {
      const want = all.filter((r) => r.action === action).map((r) => r.input)
      const got: string[] = []
      let cursor: string | null = null
      do {
        const r = await s.get(`/v1/bulk/jobs/${id}/results?action=${action}&limit=50${cursor ? `&cursor=${cursor}` : ''}`, s.test)
        got.push(...r.body.data.map((x: { input: string }) => x.input))
        cursor = r.body.next_cursor
      } while (cursor)
      expect(got, action).toEqual(want)
    }
    expect(all.some((r) => r.action === 'block')).toBe(true)
    expect((await s.get(`/v1/bulk/jobs/${id}/results?action=maybe`, s.test)).body.error.code).toBe('INVALID_REQUEST')
    // a cursor holds only with its filter, refused with the message of every paged route's filters
    const cursor = (await s.get(`/v1/bulk/jobs/${id}/results?action=block&limit=1`, s.test)).body.next_cursor
    for (const other of ['&action=approve', '']) {
      expect((await s.get(`/v1/bulk/jobs/${id}/results?cursor=${cursor}${other}`, s.test)).body.error, other).toMatchObject({
        code: 'INVALID_REQUEST',
        message: '`cursor` was made for other filters: send the same `action` as the page it came from, or start again without `cursor`.',
      })
    }
  })

  it('results.csv: the documented columns, one line per row, phone numbers as data (no formula prefix)', async () => {
    const r = await s.request('GET', `/v1/bulk/jobs/${id}/results.csv`, { key: s.test })
    expect(r.status).toBe(200)
    expect(r.headers['content-type']).toMatch(/^text\/csv/)
    expect(r.headers['content-disposition']).toMatch(/attachment; filename=".+\.csv"/)
    const lines = r.raw.trim().split('\n')
    expect(lines[0]).toMatch(/^input,action,status,reason,risk_score,credits_used,cache_hit,error,factors,e164,/)
    expect(lines).toHaveLength(inputs.length + 1)
    expect(lines[1]).toMatch(/^\+12015551000,/)
    expect(lines[1]).toContain(',+12015551000,(201) 555-1000,+1 201 555 1000,')
  })

  it('rows carry the fired factors (as the single lookup); error rows and rows stored before factors were kept have null', async () => {
    const rows = (await s.get(`/v1/bulk/jobs/${id}/results?limit=1000`, s.test)).body.data as Array<{ input: string; error: string | null; factors: string[] | null }>
    const single = (await s.post('/v1/phone', { phone: '+442079460000' }, s.test)).body.data
    expect(rows.find((r) => r.input === '+442079460000')!.factors).toEqual(single.risk.factors)
    expect(single.risk.factors.length).toBeGreaterThan(0)
    for (const r of rows) expect(r.error === null ? Array.isArray(r.factors) : r.factors === null, r.input).toBe(true)
    // A row written by an older riskcheck has 7 result cells (no factors): it reads as factors null, and an empty cell.
    const older = await s.post('/v1/bulk/jobs', { type: 'phone', inputs: ['+442079460000'] }, s.test)
    await waitDone(older.body.data.id, s.test)
    const db = (s.app.store as SqliteStore).db
    const seq = (db.prepare('SELECT seq FROM bulk_jobs WHERE id = ?').get(older.body.data.id) as { seq: number }).seq
    expect(db.prepare(`UPDATE bulk_rows SET result = json_remove(result, '$[7]') WHERE job_seq = ?`).run(seq).changes).toBe(1)
    const old = (await s.get(`/v1/bulk/jobs/${older.body.data.id}/results`, s.test)).body.data
    expect(old[0]).toMatchObject({ input: '+442079460000', error: null, factors: null, action: single.recommendation.action })
  })

  it('the job list: newest first, limit and cursor', async () => {
    const a = await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['192.0.2.1'] }, s.test)
    const b = await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['192.0.2.2'] }, s.test)
    const first = await s.get('/v1/bulk/jobs?limit=1', s.test)
    expect(first.body.data.map((j: { id: string }) => j.id)).toEqual([b.body.data.id])
    const second = await s.get(`/v1/bulk/jobs?limit=1&cursor=${first.body.next_cursor}`, s.test)
    expect(second.body.data.map((j: { id: string }) => j.id)).toEqual([a.body.data.id])
    for (const j of (await s.get('/v1/bulk/jobs', s.test)).body.data) expect(schemaErrors(BulkJobSchema, j)).toEqual([])
    expect((await s.get('/v1/bulk/jobs?limit=101', s.test)).body.error.code).toBe('INVALID_REQUEST')
    await waitDone(b.body.data.id, s.test)
  })

  it('a job-list cursor is taken only by its org and key mode (another org’s paged that org from its place)', async () => {
    const a = await orgWith(10)
    const b = await orgWith(10)
    const made: string[] = []
    for (const o of [a, b, a, b]) made.push((await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['192.0.2.9', '192.0.2.10'] }, o.test)).body.data.id)
    const first = await s.get('/v1/bulk/jobs?limit=1', a.test)
    expect(first.body.data.map((j: { id: string }) => j.id)).toEqual([made[2]])
    const cursor = first.body.next_cursor as string
    // a page cursor of listing `bulk_jobs`, A and test mode: the form of every paged route (src/server/page-cursor.ts)
    const seqOf = (id: string) => ((s.app.store as SqliteStore).db.prepare('SELECT seq FROM bulk_jobs WHERE id = ?').get(id) as { seq: number }).seq
    expect(cursor).toBe(encodePageCursor(seqOf(made[2]!), { listing: 'bulk_jobs', orgId: a.org.id, mode: 'test', filters: {} }))
    // org B's keys and A's live key: each a 400 (each was a page of its own jobs below A's place)
    for (const key of [b.test, b.live, a.live]) {
      const r = await s.get(`/v1/bulk/jobs?limit=1&cursor=${cursor}`, key)
      expect(r.status, r.raw).toBe(400)
      expect(r.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
    }
    const second = await s.get(`/v1/bulk/jobs?limit=1&cursor=${cursor}`, a.test)
    expect(second.status, second.raw).toBe(200)
    expect(second.body.data.map((j: { id: string }) => j.id)).toEqual([made[0]])
    expect(second.body.next_cursor).toBeNull()
    // a results cursor is tied to its job, so to its org and mode: on B's own job it is refused as well
    const rows = await s.get(`/v1/bulk/jobs/${made[0]}/results?limit=1`, a.test)
    expect(rows.body.next_cursor).toEqual(expect.any(String)) // two rows, or a job still running: a next page either way
    const foreign = await s.get(`/v1/bulk/jobs/${made[1]}/results?cursor=${rows.body.next_cursor}`, b.test)
    expect(foreign.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
    for (const [i, o] of [a, b, a, b].entries()) await s.app.bulk!.engineFor({ orgId: o.org.id, mode: 'test' }).waitFor(made[i]!)
  })

  it('a job of another org, or of the other key mode, is NOT_FOUND', async () => {
    const other = await orgWith(10)
    for (const key of [other.live, other.test, s.live]) {
      for (const path of [`/v1/bulk/jobs/${id}`, `/v1/bulk/jobs/${id}/results`, `/v1/bulk/jobs/${id}/results.csv`]) {
        const r = await s.get(path, key)
        expect(r.status, path).toBe(404)
        expect(r.body.error.code).toBe('NOT_FOUND')
      }
      expect((await s.request('DELETE', `/v1/bulk/jobs/${id}`, { key })).status).toBe(404)
      expect((await s.post(`/v1/bulk/jobs/${id}/retry`, {}, key)).status).toBe(404)
    }
    expect((await s.get('/v1/bulk/jobs', other.test)).body.data).toEqual([])
  })

  it('DELETE cancels a running job: inputs not reached are not charged; a finished job is returned as is', async () => {
    const slow = await start({
      bulkConcurrency: 2,
      riskcheck: {
        offline: false,
        phone: {
          carrierSource: { name: 'slow', lookup: async () => (await sleep(20), { lineType: 'mobile', carrierType: null, carrierName: 'X', ocn: null, mcc: null, mnc: null, ported: null, originalCarrier: null, lrn: null, lata: null, rateCenter: null }) },
        },
      },
    })
    try {
      const before = await slow.get('/v1/account')
      const start = before.body.data.credits.total_available as number
      const r = await slow.post('/v1/bulk/jobs', { type: 'phone', inputs: phones(200) })
      expect(r.status).toBe(202)
      await sleep(100)
      const c = await slow.request('DELETE', `/v1/bulk/jobs/${r.body.data.id}`, { key: slow.live })
      expect(c.status).toBe(200)
      expect(c.body.data.status).toBe('cancelled')
      expect(c.body.data.processed).toBeLessThan(200)
      const after = (await slow.get('/v1/account')).body.data.credits.total_available
      expect(start - after).toBe(c.body.data.credits_used)
      const rows = (await slow.get(`/v1/bulk/jobs/${r.body.data.id}/results?limit=1000`)).body
      expect(rows.data).toHaveLength(c.body.data.processed)
      expect(rows.next_cursor).toBeNull()
      const again = await slow.request('DELETE', `/v1/bulk/jobs/${r.body.data.id}`, { key: slow.live })
      expect(again.body.data).toEqual(c.body.data)
    } finally {
      await slow.close()
    }
  })

  it('retry: 202, a new job of the rows whose source failed; the old job is unchanged', async () => {
    const flaky = await start({
      riskcheck: {
        offline: false,
        phone: {
          carrierSource: {
            name: 'flaky',
            lookup: async () => {
              throw new Error('carrier down')
            },
          },
        },
      },
    })
    try {
      const r = await flaky.post('/v1/bulk/jobs', { type: 'phone', inputs: ['+12015550100', '+442079460000', 'nope'] })
      const id1 = r.body.data.id
      for (let i = 0; i < 200 && (await flaky.get(`/v1/bulk/jobs/${id1}`)).body.data.status !== 'completed'; i++) await sleep(10)
      const old = (await flaky.get(`/v1/bulk/jobs/${id1}`)).body.data
      const retry = await flaky.post(`/v1/bulk/jobs/${id1}/retry`, {})
      expect(retry.status, retry.raw).toBe(202)
      expect(retry.body.data.id).not.toBe(id1)
      expect(retry.body.data.total_rows).toBe(1) // only the US number needed the carrier source
      expect((await flaky.get(`/v1/bulk/jobs/${id1}`)).body.data).toEqual(old)
    } finally {
      await flaky.close()
    }
  })
})

describe('retention', () => {
  it('a periodic sweep deletes jobs and rows 7 days after creation', async () => {
    const t = await start({ purgeIntervalMs: 20 })
    try {
      const r = await t.post('/v1/bulk/jobs', { type: 'ip', inputs: ['192.0.2.1', '192.0.2.2'] }, t.test)
      const id = r.body.data.id
      for (let i = 0; i < 200 && (await t.get(`/v1/bulk/jobs/${id}`, t.test)).body.data.status !== 'completed'; i++) await sleep(10)
      const db = (t.app.store as SqliteStore).db
      const count = () => (db.prepare('SELECT COUNT(*) AS n FROM bulk_rows').get() as { n: number }).n
      expect(count()).toBe(2)
      t.clock.advance(7 * 24 * 3600 * 1000 - 1000)
      await sleep(60)
      expect(count()).toBe(2)
      t.clock.advance(1000)
      for (let i = 0; i < 100 && count() > 0; i++) await sleep(10)
      expect(count()).toBe(0)
      expect((db.prepare('SELECT COUNT(*) AS n FROM bulk_jobs').get() as { n: number }).n).toBe(0)
      expect((await t.get(`/v1/bulk/jobs/${id}`, t.test)).status).toBe(404)
    } finally {
      await t.close()
    }
  })
})
