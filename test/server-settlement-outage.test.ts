/**
 * A keyed request whose settlement (the charge and the answer to replay, one write) fails because the database went
 * away: the client gets the 503 envelope with Retry-After — not a hung request or a 500 — it is not charged, and
 * its retry with the same Idempotency-Key runs again instead of meeting 409 for as long as the instance lives.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { markDependency } from '../src/server/outage.js'

let app: RiskcheckServer | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

describe('a settlement that fails in an outage', () => {
  it('answers 503 UPSTREAM_UNAVAILABLE uncharged, frees the key, and the retry is answered and charged once', async () => {
    app = createServer({ db: ':memory:', instanceLeaseMs: 600, purgeIntervalMs: 0, webhookIntervalMs: 0, riskcheck: { offline: true } })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const now = Date.now()
    const org = await app.store.createOrg({ name: 'Acme', planId: 'starter' }, now)
    const { secret } = await issueApiKey(app.store, { orgId: org.id }, now)
    const balance = async () => {
      const o = (await app!.store.getOrg(org.id, Date.now()))!
      return o.subscriptionCredits + o.purchasedCredits
    }
    const before = await balance()
    const leases = app.store.leases!
    const closeHeld = leases.closeHeld.bind(leases)
    let failures = 0
    ;(leases as { closeHeld: typeof closeHeld }).closeHeld = async (...args) => {
      if (failures++ === 0) throw markDependency(Object.assign(new Error('Query read timeout'), { code: 'ETIMEDOUT' }), 'database')
      return closeHeld(...args)
    }
    const request = { method: 'POST' as const, url: '/v1/ip', payload: { ip: '8.8.8.8' }, headers: { authorization: `Bearer ${secret}`, 'idempotency-key': 'k-1' } }

    const first = await app.inject(request)
    expect(first.statusCode).toBe(503)
    expect(first.headers['retry-after']).toBeDefined()
    expect(first.json()).toMatchObject({ success: false, error: { code: 'UPSTREAM_UNAVAILABLE' } })

    // the key is free again (not 409 while this instance lives) and the retry is charged once
    let retry = await app.inject(request)
    for (let i = 0; i < 50 && (retry.statusCode === 503 || retry.statusCode === 409); i++) {
      await new Promise((r) => setTimeout(r, 100)) // the outage state ends with the next probe of the database
      retry = await app.inject(request)
    }
    expect(retry.statusCode).toBe(200)
    // the failed request's hold is given back by the lease's next renewal (every third of its 600 ms)
    for (let i = 0; i < 100 && (await balance()) !== before - 1; i++) await new Promise((r) => setTimeout(r, 100))
    expect(await balance()).toBe(before - 1)
    const replay = await app.inject(request)
    expect(replay.headers['idempotent-replayed']).toBe('true')
    expect(await balance()).toBe(before - 1)
  })
})
