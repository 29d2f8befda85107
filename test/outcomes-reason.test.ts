/**
 * The reason of `reported_fraud_before` names the outcome that was reported (fraud, a chargeback, an account
 * takeover) and how it was given: "for this phone number" by input, "for a request with this phone number" by request
 * id. The latest risk label naming the input decides which (docs/outcomes.md, "Effect on later answers").
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createRiskcheck } from '../src/index.js'
import { foldLabels, labelFactors, type CurrentLabelKeys } from '../src/outcomes/rules.js'

const rc = createRiskcheck({
  offline: true,
  cache: false,
  outcomes: [
    { input: '+14155550199', type: 'phone', outcome: 'chargeback' },
    { input: '8.8.8.8', type: 'ip', outcome: 'account_takeover' },
    { input: 'jane@gmail.com', type: 'email', outcome: 'fraud' },
  ],
})
afterAll(() => rc.close())

describe('reported_fraud_before: the reason', () => {
  it('names the kind reported by input, and says "this …" (library)', async () => {
    const phone = await rc.phone('+14155550199')
    expect(phone.risk.factors).toContain('reported_fraud_before')
    expect(phone.verdict.reason).toBe('You reported a chargeback for this phone number.')
    expect((await rc.ip('8.8.8.8')).verdict.reason).toBe('You reported an account takeover for this IP address.')
    expect((await rc.email('jane@gmail.com')).verdict.reason).toBe('You reported fraud for this email address.')
  })

  const row = (seq: number, outcome: CurrentLabelKeys['outcome'], requestId: string | null, phone = 'p1'): CurrentLabelKeys => ({
    seq,
    outcome,
    requestId,
    email: null,
    phone,
    ip: null,
  })
  const reasonOf = (rows: CurrentLabelKeys[]) =>
    labelFactors(foldLabels(rows), { phone: '+14155550199' }, () => 'p1')?.reasons.reported_fraud_before ?? null

  it('says "a request with this …" for a label given by request id (the service), the latest label deciding', () => {
    expect(reasonOf([row(1, 'chargeback', 'req_1')])).toBe('You reported a chargeback for a request with this phone number.')
    expect(reasonOf([row(1, 'fraud', 'req_1'), row(2, 'chargeback', null)])).toBe('You reported a chargeback for this phone number.')
    expect(reasonOf([row(1, 'chargeback', null), row(2, 'account_takeover', 'req_2')])).toBe(
      'You reported an account takeover for a request with this phone number.',
    )
    expect(reasonOf([row(2, 'fraud', 'req_2'), row(1, 'chargeback', null)])).toBe('You reported fraud for a request with this phone number.')
    expect(reasonOf([row(1, 'fraud', 'req_1'), row(2, 'legitimate', null)])).toBeNull()
  })
})
