/**
 * `rc.ip()` trims its input as `rc.email()` and `rc.phone()` do (String.prototype.trim's set): a byte-order mark or a
 * no-break space around a pasted address is no "part must be 0 to 255" error.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createRiskcheck } from '../src/index.js'

const rc = createRiskcheck({ offline: true, cache: false })
afterAll(() => rc.close())

describe('rc.ip() and surrounding whitespace', () => {
  it.each(['\ufeff8.8.8.8', '8.8.8.8\u00a0', '\u00a08.8.8.8\ufeff', '\u30008.8.8.8\u2028'])('looks up %j as 8.8.8.8', async (input) => {
    const r = await rc.ip(input)
    expect(r.details.ip).toBe('8.8.8.8')
  })

  it('trims as the email lookup does', async () => {
    const e = await rc.email('\ufeffjane@gmail.com\u00a0')
    expect(e.details.normalized).toBe('jane@gmail.com')
  })
})
