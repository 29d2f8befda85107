/**
 * Property: random strings and Unicode (NUL, surrogates, huge values, wrong JSON types) sent to the items endpoints of
 * an SQLite server give a valid answer — every value counted once as added, already present or invalid (named with
 * its reason) — or the documented error envelope (400 INVALID_REQUEST / 404 NOT_FOUND), never a 500; and every value
 * added is found again by `?value=` under its own text.
 */
import fc from 'fast-check'
import { listValueText } from './list-values.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { LIST_ITEM_TYPES } from '../src/lists/types.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'

let app: RiskcheckServer
let key: string
const ids: Record<string, string> = {}
let rate = 0

async function call(method: string, url: string, payload?: string) {
  const r = await app.inject({
    method: method as 'GET',
    url,
    headers: { authorization: `Bearer ${key}`, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(payload !== undefined ? { payload } : {}),
  })
  return { status: r.statusCode, body: JSON.parse(r.body) }
}

beforeAll(async () => {
  app = createServer({ db: ':memory:', dashboard: false, purgeIntervalMs: 0, rateLimitNow: () => (rate += 1000), riskcheck: { offline: true } })
  await app.ready()
  const org = await app.store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
  key = (await issueApiKey(app.store, { orgId: org.id, name: 'k', scopes: ['lists', 'lookup'] }, Date.now())).secret
  for (const t of LIST_ITEM_TYPES) ids[t] = (await call('POST', '/v1/lists', JSON.stringify({ name: t, kind: 'block', item_type: t }))).body.data.id
})
afterAll(async () => app?.close())

const text = listValueText(40)
const anyJson = fc.oneof(text, fc.integer(), fc.constant(null), fc.boolean(), fc.array(text, { maxLength: 2 }))

const wellFormed = (v: string) => {
  try {
    encodeURIComponent(v)
    return true
  } catch {
    return false
  }
}

function expectEnvelope(r: { status: number; body: any }, codes: string[]) {
  expect(r.status).toBeLessThan(500)
  expect(r.body.success).toBe(false)
  expect(codes).toContain(r.body.error.code)
}

describe('lists items endpoints: a valid answer or the documented error', () => {
  it('POST items: every value counted once, invalid ones named; GET ?value= finds what was added', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...LIST_ITEM_TYPES), fc.array(text, { maxLength: 12 }), fc.option(text), async (type, values, reason) => {
        const r = await call('POST', `/v1/lists/${ids[type]}/items`, JSON.stringify({ values, ...(reason !== null ? { reason } : {}) }))
        if (r.status !== 200) return expectEnvelope(r, ['INVALID_REQUEST'])
        const d = r.body.data
        expect(d.added + d.already_present + d.invalid.length).toBe(values.length)
        for (const i of d.invalid) expect(typeof i.message).toBe('string')
        const invalid = new Set(d.invalid.map((i: { value: string }) => i.value))
        for (const v of values.filter((x) => !invalid.has(x.slice(0, 100)) && wellFormed(x)).slice(0, 3)) {
          const found = await call('GET', `/v1/lists/${ids[type]}/items?value=${encodeURIComponent(v)}`)
          if (found.status !== 200) expectEnvelope(found, ['INVALID_REQUEST'])
          else expect(found.body.data).toHaveLength(1)
        }
      }),
      { numRuns: 150 },
    )
  })

  it('any body, query or path: an answer or INVALID_REQUEST / NOT_FOUND / INPUT_LIMIT_EXCEEDED', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...LIST_ITEM_TYPES),
        fc.record({ values: anyJson, reason: anyJson, expires_at: anyJson, extra: anyJson }, { requiredKeys: [] }),
        text,
        async (type, body, v) => {
          const posted = await call('POST', `/v1/lists/${ids[type]}/items`, JSON.stringify(body))
          if (posted.status !== 200) expectEnvelope(posted, ['INVALID_REQUEST', 'MISSING_FIELD', 'INPUT_LIMIT_EXCEEDED'])
          const removed = await call('POST', `/v1/lists/${ids[type]}/items/remove`, JSON.stringify({ values: body.values }))
          if (removed.status !== 200) expectEnvelope(removed, ['INVALID_REQUEST', 'MISSING_FIELD'])
          else expect(removed.body.data.removed + removed.body.data.not_present + removed.body.data.invalid.length).toBe((body.values as unknown[]).length)
          const e = wellFormed(v) ? encodeURIComponent(v) : '%ED%A0%80' // a lone surrogate: its UTF-8 bytes, which are no UTF-8
          for (const [method, url] of [
            ['GET', `/v1/lists/${ids[type]}/items?value=${e}`],
            ['GET', `/v1/lists/${ids[type]}/items?cursor=${e}`],
            ['DELETE', `/v1/lists/${ids[type]}/items/${e}`],
            ['GET', `/v1/lists/${e}`],
          ] as const) {
            const r = await call(method, url)
            if (r.status !== 200) expectEnvelope(r, ['INVALID_REQUEST', 'NOT_FOUND', 'MISSING_FIELD'])
          }
        },
      ),
      { numRuns: 150 },
    )
  })
})
