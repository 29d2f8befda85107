/**
 * Bulk inputs are held to the length limit of their type's single lookup (email 320, phone and phone_type 40, ip 64,
 * domain_age and email_auth 2,048 characters): a longer input is an error row (INVALID_INPUT naming the limit), as an
 * input the lookup cannot look up is — never looked up, no credit reserved or charged, and only its first characters
 * stored. Before, an over-long email was reserved a credit and looked up, and every over-long input was stored whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import type { SqliteStore } from '../src/server/store/sqlite/store.js'
import { BulkJobSchema, BulkResultRowSchema } from '../src/schema.js'
import { startTestServer, type TestServer } from './server-helpers.js'
import { schemaErrors } from './validate.js'

let s: TestServer

beforeAll(async () => {
  s = await startTestServer({ webhookIntervalMs: 0, testKeyRatePerSecond: 1_000_000 })
  await s.app.store.setOrgPlan(s.org.id, { planId: 'starter', ratePerSecond: 1_000_000 }, s.clock.now().getTime())
})
afterAll(() => s.close())

async function orgWith(credits: number) {
  const now = s.clock.now().getTime()
  const org = await s.app.store.createOrg({ name: `org-${credits}`, planId: 'free' }, now)
  await s.app.store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: credits, ratePerSecond: 10_000 }, now)
  const live = await issueApiKey(s.app.store, { orgId: org.id }, now)
  return { org, live: live.secret }
}

const account = async (key: string) => (await s.get('/v1/account', key)).body.data as { credits: { total_available: number }; usage: { period: { lookups: number; credits: number } } }
const finished = (orgId: string, id: string) => s.app.bulk!.engineFor({ orgId, mode: 'live' }).waitFor(id)
const rowsOf = async (id: string, key: string) => (await s.get(`/v1/bulk/jobs/${id}/results?limit=1000`, key)).body.data as Array<Record<string, any>>
/** Characters of `input` stored over the rows of a job (SQLite). */
function storedChars(id: string): number {
  const db = (s.app.store as SqliteStore).db
  const row = db.prepare('SELECT SUM(length(r.input)) AS n FROM bulk_rows r JOIN bulk_jobs j ON j.seq = r.job_seq WHERE j.id = ?').get(id) as { n: number }
  return row.n
}

/** Per type: the documented limit, an input of exactly that length, and a 300,000-character one. */
const CASES = [
  { type: 'email', limit: 320, fits: `${'a'.repeat(308)}@example.com`, huge: `${'a'.repeat(300_000)}@example.com` },
  { type: 'phone', limit: 40, fits: `+1 201 555 0100${' '.repeat(25)}`, huge: '1'.repeat(300_000) },
  { type: 'phone_type', limit: 40, fits: `+1 201 555 0100${' '.repeat(25)}`, huge: '2'.repeat(300_000) },
  { type: 'ip', limit: 64, fits: `${' '.repeat(57)}8.8.8.8`, huge: '9'.repeat(300_000) },
  { type: 'domain_age', limit: 2048, fits: `https://example.org/${'p'.repeat(2028)}`, huge: `${'d'.repeat(300_000)}.com` },
  { type: 'email_auth', limit: 2048, fits: `https://example.org/${'q'.repeat(2028)}`, huge: `${'e'.repeat(300_000)}.com` },
] as const

describe('POST /v1/bulk/jobs: an input longer than its type’s limit', () => {
  for (const c of CASES) {
    it(`${c.type}: is a free error row naming the limit (${c.limit}); not reserved, looked up or stored whole; one character less is looked up`, async () => {
      expect(c.fits.length).toBe(c.limit)
      const o = await orgWith(100)
      const justOver = `${c.fits} `
      const r = await s.post('/v1/bulk/jobs', { type: c.type, inputs: [c.fits, c.huge, justOver] }, o.live)
      expect(r.status, r.raw.slice(0, 300)).toBe(202)
      expect(schemaErrors(BulkJobSchema, r.body.data)).toEqual([])
      expect(r.body.data).toMatchObject({ unique_inputs: 3, processed: 2, results: { errors: 2 } })
      // one credit reserved: for the input that fits, none for the two over-long ones
      expect((await account(o.live)).credits.total_available).toBe(99)
      const done = await finished(o.org.id, r.body.data.id)
      expect(done.status).toBe('completed')
      const rows = await rowsOf(done.id, o.live)
      for (const row of rows) expect(schemaErrors(BulkResultRowSchema, row)).toEqual([])
      expect(rows[0]!.error).toBeNull()
      for (const [row, length] of [[rows[1]!, c.huge.length], [rows[2]!, c.limit + 1]] as const) {
        expect(row).toMatchObject({ action: null, status: null, credits_used: 0, factors: null })
        expect(row.error).toBe(`INVALID_INPUT: Inputs of type ${c.type} are at most ${c.limit.toLocaleString('en-US')} characters (this one has ${length.toLocaleString('en-US')}).`)
        expect(row.input.length).toBeLessThanOrEqual(c.limit + 1)
      }
      // what is stored is bounded by the limits, not by the 300,000 characters given
      expect(storedChars(done.id)).toBeLessThanOrEqual(3 * (c.limit + 1))
      const acct = await account(o.live)
      expect(acct.credits.total_available).toBe(100 - done.credits_used)
      expect(acct.usage.period.lookups).toBe(1)
    })
  }

  it('needs no credit for the over-long inputs: a balance of one runs a job of one good and two over-long emails', async () => {
    const o = await orgWith(1)
    const r = await s.post('/v1/bulk/jobs', { type: 'email', inputs: ['jane@example.org', 'x'.repeat(321), `${'y'.repeat(5000)}@example.org`] }, o.live)
    expect(r.status, r.raw.slice(0, 300)).toBe(202)
    const done = await finished(o.org.id, r.body.data.id)
    expect(done.results.errors).toBe(2)
    expect((await account(o.live)).credits.total_available).toBe(1 - done.credits_used)
  })

  it('is refused by the single lookup too: the combined check (400) and the phone and IP lookups (422) name the same limit', async () => {
    const check = await s.post('/v1/check', { email: 'x'.repeat(321) }, s.test)
    expect(check.status).toBe(400)
    expect(check.body.error.message).toContain('at most 320 characters')
    const phone = await s.post('/v1/phone', { phone: '1'.repeat(41) }, s.test)
    expect([phone.status, phone.body.error.code]).toEqual([422, 'INVALID_INPUT'])
    expect(phone.body.error.message).toContain('at most 40 characters')
    const ip = await s.post('/v1/ip', { ip: '1'.repeat(65) }, s.test)
    expect([ip.status, ip.body.error.code]).toEqual([422, 'INVALID_INPUT'])
    expect(ip.body.error.message).toContain('1 to 64 characters')
  })
})
