import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { buildDelivery, WEBHOOK_USER_AGENT } from './deliver.js'
import { buildCreditsDepletedEvent } from './events.js'
import { verifyWebhook } from './signature.js'

const now = new Date('2026-04-01T10:00:00.750Z')
const event = buildCreditsDepletedEvent({ orgId: 'org_1', now, balance: 0, monthlyCredits: 100, id: 'evt_0123456789abcdef01234567' })
const secret = 'whsec_test_secret'

describe('buildDelivery', () => {
  it('builds the body and the documented headers, signed at `now` over the exact body', () => {
    const { body, headers } = buildDelivery(event, { secret, format: 'json' }, { deliveryId: 'dlv_1', now })
    expect(body).toBe(JSON.stringify(event))
    const t = 1775037600
    const v1 = createHmac('sha256', secret).update(`${t}.${body}`, 'utf8').digest('hex')
    expect(headers).toEqual({
      'Content-Type': 'application/json',
      'User-Agent': WEBHOOK_USER_AGENT,
      'SVC-Signature': `t=${t},v1=${v1}`,
      'SVC-Event-Id': 'evt_0123456789abcdef01234567',
      'SVC-Event-Type': 'credits.depleted',
      'SVC-Delivery-Id': 'dlv_1',
    })
    expect(verifyWebhook(body, headers['SVC-Signature'], secret, { now: () => now.getTime() })).toEqual({ ok: true, timestamp: t })
  })

  it('signs chat formats too, and a later build gets a fresh timestamp', () => {
    const a = buildDelivery(event, { secret, format: 'slack' }, { deliveryId: 'dlv_2', now })
    expect(JSON.parse(a.body)).toEqual({ text: expect.stringContaining('credits depleted') })
    const later = new Date(now.getTime() + 3600_000)
    const b = buildDelivery(event, { secret, format: 'slack' }, { deliveryId: 'dlv_2', now: later })
    expect(b.headers['SVC-Signature']).not.toBe(a.headers['SVC-Signature'])
    expect(verifyWebhook(b.body, b.headers['SVC-Signature'], secret, { now: () => later.getTime() }).ok).toBe(true)
    expect(verifyWebhook(a.body, a.headers['SVC-Signature'], secret, { now: () => later.getTime() })).toEqual({ ok: false, error: 'timestamp_too_old' })
  })
})
