/**
 * What only the SQLite org-policy store has to show: the org of a policy is checked, and answers are written in the
 * store's group commit. (Its contract runs on every engine from test/store-contract/contracts.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createSqliteStore, type SqliteStore } from './store.js'
import { createSqliteOrgPolicyStore, type LoggedAnswer } from './org-policies.js'

const T0 = Date.parse('2026-11-22T00:00:00Z')

const open: SqliteStore[] = []
afterEach(() => {
  for (const s of open.splice(0)) s.close()
})

const answer = (at: number, input: string): LoggedAnswer => ({
  at,
  type: 'ip',
  input,
  action: 'verify',
  score: 40,
  factors: ['ip_datacenter', 'ip_cloud'],
  context: null,
})

describe('org-policy store (sqlite only)', () => {
  it('refuses a policy of an org that does not exist', () => {
    const store = createSqliteStore(':memory:')
    open.push(store)
    const policies = createSqliteOrgPolicyStore(store.db)
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
