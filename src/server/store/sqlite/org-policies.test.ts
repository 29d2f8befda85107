import { createMemoryOrgPolicyStore } from './memory.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createSqliteStore, type SqliteStore } from './store.js'
import {
  ANSWER_LOG_TTL_MS,
  createSqliteOrgPolicyStore,
  type LoggedAnswer,
  type OrgPolicyRecord,
  type OrgPolicyStoreOptions,
} from './org-policies.js'

const T0 = Date.parse('2026-11-22T00:00:00Z')
const DAY = 24 * 60 * 60 * 1000

const open: SqliteStore[] = []
afterEach(() => {
  for (const s of open.splice(0)) s.close()
})

/** Both implementations, each with two orgs that exist (SQLite checks the org of a policy). */
const IMPLEMENTATIONS = {
  sqlite(options?: OrgPolicyStoreOptions) {
    const store = createSqliteStore(':memory:')
    open.push(store)
    const a = store.createOrg({ name: 'A', planId: 'free' }, T0).id
    const b = store.createOrg({ name: 'B', planId: 'free' }, T0).id
    return { policies: createSqliteOrgPolicyStore(store.db, options), a, b }
  },
  memory(options?: OrgPolicyStoreOptions) {
    return { policies: createMemoryOrgPolicyStore(options), a: 'org_a', b: 'org_b' }
  },
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

describe.each(Object.entries(IMPLEMENTATIONS))('org-policy store (%s)', (_name, make) => {
  it('set, get, version, list and clear an org’s policy', () => {
    const { policies, a, b } = make()
    expect(policies.getOrgPolicy(a)).toBeNull()
    expect(policies.getOrgPolicyVersion(a)).toBeNull()
    const rec: OrgPolicyRecord = { orgId: a, version: 'pol_0123456789abcdef', canonical: '{"weights":{"ip_vpn":60}}', description: 'VPN', source: 'p.yaml', setAt: T0 }
    policies.setOrgPolicy(rec)
    expect(policies.getOrgPolicy(a)).toEqual(rec)
    expect(policies.getOrgPolicyVersion(a)).toBe(rec.version)
    expect(policies.getOrgPolicyVersion(b)).toBeNull()
    const next = { ...rec, version: 'pol_fedcba9876543210', canonical: '{}', description: null, source: null, setAt: T0 + 1 }
    policies.setOrgPolicy(next)
    expect(policies.getOrgPolicy(a)).toEqual(next)
    policies.setOrgPolicy({ ...rec, orgId: b })
    expect(policies.listOrgPolicies().map((p) => [p.orgId, p.version])).toEqual(
      [
        [a, next.version],
        [b, rec.version],
      ].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)),
    )
    expect(policies.clearOrgPolicy(a)).toEqual(next)
    expect(policies.clearOrgPolicy(a)).toBeNull()
    expect(policies.getOrgPolicy(a)).toBeNull()
    expect(policies.getOrgPolicy(b)?.version).toBe(rec.version)
  })

  it('answers: per org, since a time, oldest first, the newest `limit`; exactly what was logged', () => {
    const { policies, a, b } = make()
    policies.appendAnswers(a, [answer(T0 + 2, 'second'), answer(T0 + 1, 'first')])
    policies.appendAnswers(a, [answer(T0 + 3, 'a@b.example · 8.8.8.8', { type: 'check', action: 'block', score: 90, factors: ['ip_tor', 'email_disposable'], context: 'signup' })])
    policies.appendAnswers(a, [answer(T0 + 4, 'none', { action: 'approve', score: 0, factors: [] })])
    policies.appendAnswers(b, [answer(T0, 'other org')])
    const all = policies.listAnswers(a, T0)
    expect(all.map((x) => x.input)).toEqual(['first', 'second', 'a@b.example · 8.8.8.8', 'none'])
    expect(all[2]).toEqual({ at: T0 + 3, type: 'check', input: 'a@b.example · 8.8.8.8', action: 'block', score: 90, factors: ['ip_tor', 'email_disposable'], context: 'signup' })
    expect(all[3]!.factors).toEqual([])
    expect(policies.listAnswers(a, T0 + 2).map((x) => x.input)).toEqual(['second', 'a@b.example · 8.8.8.8', 'none'])
    expect(policies.listAnswers(a, T0, 2).map((x) => x.input)).toEqual(['a@b.example · 8.8.8.8', 'none'])
    expect(policies.listAnswers(b, 0).map((x) => x.input)).toEqual(['other org'])
  })

  it('purge: answers older than 7 days go, and each org keeps only its newest answers', () => {
    const { policies, a, b } = make({ maxAnswersPerOrg: 3 })
    const now = T0 + 30 * DAY
    policies.appendAnswers(a, [answer(now - 8 * DAY, 'old'), answer(now - ANSWER_LOG_TTL_MS, 'edge')])
    for (let i = 0; i < 4; i++) policies.appendAnswers(b, [answer(now - DAY + i, `b${i}`)])
    expect(policies.purgeAnswers(now)).toBe(2) // 'old' (a) and 'b0' (b's fourth newest)
    expect(policies.listAnswers(a, 0).map((x) => x.input)).toEqual(['edge'])
    expect(policies.listAnswers(b, 0).map((x) => x.input)).toEqual(['b1', 'b2', 'b3'])
    expect(policies.purgeAnswers(now)).toBe(0)
    expect(policies.purgeAnswers(now + 1)).toBe(1) // 'edge' is now older than 7 days
  })
})

describe('org-policy store (sqlite only)', () => {
  it('refuses a policy of an org that does not exist', () => {
    const { policies } = IMPLEMENTATIONS.sqlite()
    expect(() => policies.setOrgPolicy({ orgId: 'org_nope', version: 'pol_0123456789abcdef', canonical: '{}', description: null, source: null, setAt: T0 })).toThrow(/FOREIGN KEY/)
  })
})

describe('answer log in the group commit (SQLite)', () => {
  it("the answers of a turn are written in the store's group commit, together with its credit writes", async () => {
    const store = createSqliteStore(':memory:')
    open.push(store)
    const org = store.createOrg({ name: 'G', planId: 'free' }, T0)
    const policies = createSqliteOrgPolicyStore(store.db, { groupWrite: (w) => store.groupWrite(w) })
    const logged = policies.appendAnswers(org.id, [answer(T0, '192.0.2.1'), answer(T0 + 1, '192.0.2.2')])
    const reserved = store.grouped!.reserveCredits(org.id, 1, T0)
    // nothing is written before the turn's commit …
    expect(policies.listAnswers(org.id, 0)).toEqual([])
    await Promise.all([logged, reserved])
    // … then both, from one commit
    expect(policies.listAnswers(org.id, 0).map((a) => a.input)).toEqual(['192.0.2.1', '192.0.2.2'])
    expect(store.balance(org.id, T0)).toBe(99)
  })
})
