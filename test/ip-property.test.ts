/**
 * Property: for any string (random ASCII, Unicode, IP-like text, mutated addresses), `rc.ip()` either returns a
 * schema-valid result or rejects with INVALID_INPUT — never another error — and does so quickly.
 */
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { isRiskcheckError } from '../src/errors.js'
import { createRiskcheck } from '../src/index.js'
import { parseIp } from '../src/sources/ip/parse.js'
import { assertValidResult } from './validate.js'

const rc = createRiskcheck({ offline: true, cache: false })
afterAll(() => rc.close())

const ipLike = fc.oneof(
  fc.ipV4(),
  fc.ipV4Extended(), // octal/hex/short forms: must be rejected
  fc.ipV6(),
  fc.stringMatching(/^[0-9a-fA-F:.%\/\[\] ]{0,50}$/),
  fc.tuple(fc.ipV6(), fc.string({ maxLength: 6 })).map(([a, b]) => a + b),
  fc.tuple(fc.string({ maxLength: 3 }), fc.ipV4(), fc.string({ maxLength: 3 })).map(([a, b, c]) => a + b + c),
)
const anyText = fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 70 }), ipLike)

describe('rc.ip() on arbitrary strings', () => {
  it('answers with a schema-valid result or INVALID_INPUT', async () => {
    let results = 0
    let rejected = 0
    await fc.assert(
      fc.asyncProperty(anyText, async (text) => {
        try {
          const r = await rc.ip(text)
          assertValidResult(r, 'ip')
          const ip = parseIp(text)
          expect(ip).not.toBeNull()
          expect(r.details.ip).toBe(ip!.address)
          expect(r.details.version).toBe(ip!.version)
          results++
        } catch (e) {
          if (!isRiskcheckError(e, 'INVALID_INPUT')) throw e
          expect(parseIp(text)).toBeNull()
          rejected++
        }
      }),
      { numRuns: 2000, seed: 20260822 },
    )
    expect(results).toBeGreaterThan(150) // the fixed seed gives ~200 valid addresses among 2000 inputs
    expect(rejected).toBeGreaterThan(1000)
    // (speed: scripts/bench/ip.ts)
  })
})
