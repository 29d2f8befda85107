import { describe, expect, it } from 'vitest'
import { PhoneCarrierError, emptyCarrierRecord, isPhoneCarrierSource, lookupCarrierSafely, type PhoneCarrierSource } from './carrier-source.js'

describe('lookupCarrierSafely', () => {
  it('cuts off a source that ignores its timeout and aborts its signal', async () => {
    let aborted = false
    const hung: PhoneCarrierSource = {
      name: 'hung',
      lookup: (_e164, { signal }) =>
        new Promise(() => {
          signal?.addEventListener('abort', () => (aborted = true))
        }),
    }
    const out = await lookupCarrierSafely(hung, '+12015550123', 50)
    expect(out).toEqual({ ok: false, source: 'hung', failure: 'timeout', message: 'hung: no answer within 50 ms' })
    expect(aborted).toBe(true)
  })

  it('turns throws and rejections into failures, keeping a PhoneCarrierError kind', async () => {
    const throwing: PhoneCarrierSource = {
      lookup: () => {
        throw new Error('boom')
      },
    }
    expect(await lookupCarrierSafely(throwing, '+1', 100)).toMatchObject({ ok: false, source: 'carrier', failure: 'network', message: 'carrier: boom' })
    const rejecting: PhoneCarrierSource = { name: 'x', lookup: async () => Promise.reject(new PhoneCarrierError('http', 'HTTP 503', { status: 503 })) }
    expect(await lookupCarrierSafely(rejecting, '+1', 100)).toMatchObject({ ok: false, failure: 'http' })
    const nothing = { lookup: async () => null } as unknown as PhoneCarrierSource
    expect(await lookupCarrierSafely(nothing, '+1', 100)).toMatchObject({ ok: false, failure: 'malformed' })
  })

  it('keeps only well-typed fields of a user-written source', async () => {
    const sloppy = {
      name: 'mine',
      lookup: async () => ({ lineType: 'cellular', carrierName: 'Acme', ported: 'yes', lrn: 2015550100, ocn: '', mcc: '310' }),
    } as unknown as PhoneCarrierSource
    const out = await lookupCarrierSafely(sloppy, '+12015550123', 100)
    expect(out).toEqual({ ok: true, source: 'mine', record: { ...emptyCarrierRecord(), carrierName: 'Acme', mcc: '310' } })
  })

  it('passes the e164 and a timeout to the source', async () => {
    const calls: Array<[string, number]> = []
    const src: PhoneCarrierSource = {
      lookup: async (e164, o) => {
        calls.push([e164, o.timeoutMs])
        return { ...emptyCarrierRecord(), lineType: 'mobile', ported: false }
      },
    }
    const out = await lookupCarrierSafely(src, '+14165550123', 1234)
    expect(calls).toEqual([['+14165550123', 1234]])
    expect(out).toMatchObject({ ok: true, record: { lineType: 'mobile', ported: false } })
  })
})

describe('isPhoneCarrierSource', () => {
  it('recognises objects with a lookup method', () => {
    expect(isPhoneCarrierSource({ lookup: async () => emptyCarrierRecord() })).toBe(true)
    expect(isPhoneCarrierSource({})).toBe(false)
    expect(isPhoneCarrierSource(null)).toBe(false)
    expect(isPhoneCarrierSource(() => 1)).toBe(false)
  })
})
