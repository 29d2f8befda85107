/**
 * The Bulk jobs page takes the API's per-input limit: a pasted input longer than its type's single lookup takes is an
 * error row of a live job, no credit reserved or charged for it and only its first characters stored, on every engine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { engines, start, type Running } from './engines.js'
import { Client } from './http.js'

for (const engine of engines('test/dashboard/bulk-input-limits.test.ts')) {
  describe(`dashboard Bulk jobs page: an over-long input (${engine})`, () => {
    let r: Running
    let c: Client
    let team = ''
    beforeAll(async () => {
      r = await start(engine)
      c = new Client(r.base)
      team = await c.signUp('owner@example.test', 'Cleaners')
      const link = /\/dashboard\/verify\?token=\S+/.exec(r.mails.find((m) => m.to === 'owner@example.test')!.text)![0]
      await c.get(link)
    }, 60_000)
    afterAll(async () => r?.close())

    it('is an error row naming the limit; a live job reserves and charges only the input that fits', async () => {
      const orgId = team.split('/').pop()!
      const balance = async () => (await r.app.store.getOrg(orgId, r.clock.t))!
      // one credit: enough for the input that fits, not for the over-long ones too (before, 402 and no job)
      await r.app.store.setOrgPlan(orgId, { planId: 'free', monthlyCredits: 1, ratePerSecond: 10_000 }, r.clock.t)
      const before = await balance()
      expect(before.subscriptionCredits + before.purchasedCredits).toBe(1)
      await c.get(`${team}/bulk`)
      const long = `${'x'.repeat(20_000)}@example.org`
      const started = await c.post(`${team}/bulk`, { type: 'email', mode: 'live', inputs: `jane@example.org\n${long}\n${'y'.repeat(321)}\n` })
      expect(started.status, started.body.slice(0, 300)).toBe(303)
      const [job] = JSON.parse((await c.get(`${team}/bulk/jobs.json`)).body) as Array<{ id: string }>
      const bulk = r.app.bulk!.engineFor({ orgId, mode: 'live' })
      const done = await bulk.waitFor(job!.id)
      expect(done).toMatchObject({ status: 'completed', unique_inputs: 3, results: { errors: 2 } })
      const rows = (await bulk.results(done.id, { limit: 10 })).data
      expect(rows[1]).toMatchObject({ action: null, credits_used: 0, error: 'INVALID_INPUT: Inputs of type email are at most 320 characters (this one has 20,012).' })
      expect(rows[1]!.input).toBe(`${'x'.repeat(320)}…`)
      const after = await balance()
      expect(before.subscriptionCredits + before.purchasedCredits - (after.subscriptionCredits + after.purchasedCredits)).toBe(done.credits_used)
      expect(done.credits_used).toBeLessThanOrEqual(1)
    })
  })
}
