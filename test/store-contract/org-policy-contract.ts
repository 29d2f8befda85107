/**
 * The contract of {@link OrgPolicyStore} (src/server/store/contracts/org-policies.ts): per-org policies and the answer log,
 * run by ./contracts.test.ts on every engine of ./engines.ts. Every call is awaited, so synchronous and
 * promise-returning stores run the same cases.
 */
import { describe, expect, it } from 'vitest'
import { ANSWER_LOG_TTL_MS } from '../../src/server/store/common/answer-log.js'
import { type LoggedAnswer, type OrgPolicyRecord, type OrgPolicyStore, type OrgPolicyStoreOptions } from '../../src/server/store/contracts/org-policies.js'
const T0 = Date.parse('2026-11-22T00:00:00Z')
const DAY = 24 * 60 * 60 * 1000

/** An org-policy store made for one case, with two orgs that exist (some engines check the org of a policy). */
export interface ContractPolicies {
  policies: OrgPolicyStore
  a: string
  b: string
  done(): Promise<void>
}

const answer = (at: number, input: string, extra: Partial<LoggedAnswer> = {}): LoggedAnswer => ({
  at,
  type: 'ip',
  input,
  action: 'verify',
  score: 40,
  factors: ['ip_datacenter', 'ip_cloud'],
  context: null,
  ...extra,
})

export function orgPolicyContract(name: string, factory: (options?: OrgPolicyStoreOptions) => Promise<ContractPolicies>): void {
  const withPolicies =
    (run: (c: ContractPolicies) => Promise<void>, options?: OrgPolicyStoreOptions) =>
    async () => {
      const c = await factory(options)
      try {
        await run(c)
      } finally {
        await c.done()
      }
    }
  const inputs = async (policies: OrgPolicyStore, orgId: string, since: number, limit?: number) => (await policies.listAnswers(orgId, since, limit)).map((x) => x.input)

  describe(`org-policy store (${name})`, () => {
    it(
      'set, get, version, list and clear an org’s policy',
      withPolicies(async ({ policies, a, b }) => {
        expect(await policies.getOrgPolicy(a)).toBeNull()
        expect(await policies.getOrgPolicyVersion(a)).toBeNull()
        const rec: OrgPolicyRecord = { orgId: a, version: 'pol_0123456789abcdef', canonical: '{"weights":{"ip_vpn":60}}', description: 'VPN', source: 'p.yaml', setAt: T0 }
        await policies.setOrgPolicy(rec)
        expect(await policies.getOrgPolicy(a)).toEqual(rec)
        expect(await policies.getOrgPolicyVersion(a)).toBe(rec.version)
        expect(await policies.getOrgPolicyVersion(b)).toBeNull()
        const next = { ...rec, version: 'pol_fedcba9876543210', canonical: '{}', description: null, source: null, setAt: T0 + 1 }
        await policies.setOrgPolicy(next)
        expect(await policies.getOrgPolicy(a)).toEqual(next)
        await policies.setOrgPolicy({ ...rec, orgId: b })
        expect((await policies.listOrgPolicies()).map((p) => [p.orgId, p.version])).toEqual(
          [
            [a, next.version],
            [b, rec.version],
          ].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)),
        )
        expect(await policies.clearOrgPolicy(a)).toEqual(next)
        expect(await policies.clearOrgPolicy(a)).toBeNull()
        expect(await policies.getOrgPolicy(a)).toBeNull()
        expect((await policies.getOrgPolicy(b))?.version).toBe(rec.version)
      }),
    )

    it(
      'answers: per org, since a time, oldest first, the newest `limit`; exactly what was logged',
      withPolicies(async ({ policies, a, b }) => {
        await policies.appendAnswers(a, [answer(T0 + 2, 'second'), answer(T0 + 1, 'first')])
        const velocity = { ip: { hour: 3, day: 12 }, network: { hour: 4, day: 40 }, email_domain: null, email: { hour: 1, day: 1 }, phone: null }
        await policies.appendAnswers(a, [
          answer(T0 + 3, 'a@b.example · 8.8.8.8', { type: 'check', action: 'block', score: 90, factors: ['ip_tor', 'email_disposable'], context: 'signup', velocity }),
        ])
        await policies.appendAnswers(a, [answer(T0 + 4, 'none', { action: 'approve', score: 0, factors: [] })])
        await policies.appendAnswers(b, [answer(T0, 'other org')])
        const all = await policies.listAnswers(a, T0)
        expect(all.map((x) => x.input)).toEqual(['first', 'second', 'a@b.example · 8.8.8.8', 'none'])
        // the velocity counts come back as they were given (numbers only); an answer logged without them has none
        expect(all[2]).toEqual({ at: T0 + 3, type: 'check', input: 'a@b.example · 8.8.8.8', action: 'block', score: 90, factors: ['ip_tor', 'email_disposable'], context: 'signup', velocity })
        expect(all[3]!.factors).toEqual([])
        expect(all[3]!.velocity).toBeNull()
        expect(await inputs(policies, a, T0 + 2)).toEqual(['second', 'a@b.example · 8.8.8.8', 'none'])
        expect(await inputs(policies, a, T0, 2)).toEqual(['a@b.example · 8.8.8.8', 'none'])
        expect(await inputs(policies, b, 0)).toEqual(['other org'])
      }),
    )

    it(
      'purge: answers older than 7 days go, and each org keeps only its newest answers',
      withPolicies(
        async ({ policies, a, b }) => {
          const now = T0 + 30 * DAY
          await policies.appendAnswers(a, [answer(now - 8 * DAY, 'old'), answer(now - ANSWER_LOG_TTL_MS, 'edge')])
          for (let i = 0; i < 4; i++) await policies.appendAnswers(b, [answer(now - DAY + i, `b${i}`)])
          expect(await policies.purgeAnswers(now)).toBe(2) // 'old' (a) and 'b0' (b's fourth newest)
          expect(await inputs(policies, a, 0)).toEqual(['edge'])
          expect(await inputs(policies, b, 0)).toEqual(['b1', 'b2', 'b3'])
          expect(await policies.purgeAnswers(now)).toBe(0)
          expect(await policies.purgeAnswers(now + 1)).toBe(1) // 'edge' is now older than 7 days
        },
        { maxAnswersPerOrg: 3 },
      ),
    )
  })
}
