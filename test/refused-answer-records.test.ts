/**
 * What a refused request leaves behind, on every engine: a live request whose settlement is refused (as when its hold
 * was swept: 503, nothing charged, no answer given) keeps no input hashes, no answer-log row and no review — with an
 * Idempotency-Key (settled with its answer, after the route) or without; retried with its key it is answered once,
 * and that answer is kept, logged and queued once.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer } from '../src/server/app.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { outcomeStoreOf, reviewStoreOf } from '../src/server/store/open-storage.js'
import { ENGINES, type FreshStorage } from './store-contract/engines.js'

const opened: FreshStorage[] = []
afterAll(async () => {
  for (const s of opened) await s.done()
})

// 10.0.0.1: a private address — verdict invalid, action review (queued for the org's reviewers)
const IP = '10.0.0.1'

for (const engine of ENGINES) {
  if (engine.skip) console.log(`[skipped] refused requests on ${engine.name}: ${engine.skip}`)
  describe.skipIf(engine.skip !== null)(`a refused request's records (${engine.name})`, () => {
    it('a refused settlement keeps no input hashes, answer-log row or review; its retry keeps one of each', async () => {
      const fresh = await engine.open()
      opened.push(fresh)
      const real = fresh.store
      const leases = real.leases!
      let refuse = 2
      const store: Store = { ...real, leases: { ...leases, closeHeld: async (...args) => (refuse-- > 0 ? false : leases.closeHeld(...args)) } }
      // the answer log of the engine (a bare PostgreSQL store would log into memory)
      const orgPolicies = fresh.orgPolicies()
      const app = createServer({ db: store, orgPolicies, purgeIntervalMs: 0, webhookIntervalMs: 0, dashboard: false, riskcheck: { offline: true }, velocity: false })
      const now = Date.now()
      let orgId = ''
      const ids: string[] = []
      try {
        await app.ready()
        const org = await real.createOrg({ name: 'Refused', planId: 'starter' }, now)
        orgId = org.id
        const { secret } = await issueApiKey(real, { orgId }, now)
        const post = (key?: string) =>
          app.inject({ method: 'POST', url: '/v1/ip', headers: { authorization: `Bearer ${secret}`, ...(key ? { 'idempotency-key': key } : {}) }, payload: { ip: IP } })

        for (const key of [undefined, 'k-1']) {
          const refused = await post(key)
          expect(refused.statusCode).toBe(503)
          expect(refused.json().error.code).toBe('UPSTREAM_UNAVAILABLE')
          ids.push(refused.json().error.request_id)
        }
        const retry = await post('k-1')
        expect(retry.statusCode).toBe(200)
        expect(retry.json().data.recommendation.action).toBe('review')
        ids.push(retry.json().data.request.id)
        expect(new Set(ids).size).toBe(3)
        for (const id of ids) expect(id).toMatch(/^req_/)
      } finally {
        // closing flushes the answer log, the review queue and the input hashes (kept and taken back)
        await app.close()
      }
      const answeredId = ids[2]!
      const inputs = await outcomeStoreOf(real)!.inputsOf(orgId, 'live', ids)
      expect([...inputs.keys()]).toEqual([answeredId])
      expect(inputs.get(answeredId)!.ip).toMatch(/^[0-9a-f]{64}$/)
      const logged = await orgPolicies.listAnswers(orgId, 0)
      expect(logged.map((a) => a.requestId)).toEqual([answeredId])
      const queued = await reviewStoreOf(real)!.listReviews(orgId, 'live', { limit: 10, cutoffMs: 0 })
      expect(queued.data.map((r) => r.requestId)).toEqual([answeredId])
    })
  })
}
