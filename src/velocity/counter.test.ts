import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createVelocityCounter, createVelocityHasher, velocityKeyOf } from './counter.js'
import { sipHash128 } from './siphash.js'

const key = velocityKeyOf(Buffer.from('a secret of twenty chars', 'utf8'))

/** The store key computed the plain way: the message as one UTF-8 buffer. */
function plain(space: 'l' | 't', kind: string, tag: string, value: string): string {
  const msg = Buffer.from(`${space}\u0000${kind}\u0000${value}`, 'utf8')
  const out = new Uint8Array(16)
  sipHash128(key, msg, msg.length, out)
  return `${space}${tag}:${Buffer.from(out).toString('base64url')}`
}

describe('velocity store keys', () => {
  it('hash the UTF-8 message of mode, kind and value, ASCII or not, long or short', () => {
    const hash = createVelocityHasher(key)
    for (const v of ['203.0.113.7', 'jane@example.com', 'zoë@bücher.de', '+447400123456', 'x'.repeat(1000) + 'é', '']) {
      expect(hash('l', 'email', v)).toBe(plain('l', 'email', 'e', v))
      expect(hash('t', 'ip', v)).toBe(plain('t', 'ip', 'i', v))
    }
  })

  it('agree with the plain computation for any string', () => {
    const hash = createVelocityHasher(key)
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (v) => hash('l', 'phone', v) === plain('l', 'phone', 'p', v)))
  })

  it('differ by mode, kind and secret', () => {
    const hash = createVelocityHasher(key)
    const other = createVelocityHasher(velocityKeyOf(Buffer.from('another secret, twenty', 'utf8')))
    const keys = new Set([hash('l', 'email', 'a@b.co'), hash('t', 'email', 'a@b.co'), hash('l', 'email_domain', 'a@b.co'), other('l', 'email', 'a@b.co')])
    expect(keys.size).toBe(4)
  })
})

describe('the counter without a store (its own tags)', () => {
  it('counts each value apart, ASCII or not, by mode and kind; the same value together', () => {
    const counter = createVelocityCounter({ secret: 'a secret of twenty chars' })
    const now = Date.UTC(2026, 0, 1)
    const count = (values: Record<string, string>, test = false) => counter.count(values, test, now) as Record<string, { hour: number } | null>
    const values = ['zoë@bücher.de', 'zoe@bücher.de', 'zoë@bucher.de', 'x'.repeat(1000) + 'é', 'x'.repeat(1000) + 'è', '', '\u0000']
    for (const v of values) expect(count({ email: v }).email, v).toEqual({ hour: 1, day: 1 })
    for (const v of values) expect(count({ email: v }).email, v).toEqual({ hour: 2, day: 2 })
    // the same text as another kind, or in test mode, is another value
    expect(count({ phone: values[0]! }).phone).toEqual({ hour: 1, day: 1 })
    expect(count({ email: values[0]! }, true).email).toEqual({ hour: 1, day: 1 })
  })

  it('tells any two different strings apart', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 80 }), (a, b) => {
        fc.pre(a !== b)
        const counter = createVelocityCounter({ secret: 'a secret of twenty chars' })
        counter.count({ ip: a }, false, 0)
        return (counter.count({ ip: b }, false, 0) as { ip: { hour: number } }).ip.hour === 1
      }),
    )
  })
})
