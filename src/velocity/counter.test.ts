import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createVelocityHasher, velocityKeyOf } from './counter.js'
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
