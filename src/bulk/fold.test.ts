import { describe, expect, it } from 'vitest'
import { createFakeCheck, createFakeEnv } from '../../test/bulk-fakes.js'
import { emailCheck } from '../checks/email/index.js'
import { phoneCheck } from '../checks/phone.js'
import { foldedRows, foldInputs, lookupOptionsFor } from './fold.js'

describe('foldInputs', () => {
  it('folds by the check normalization, drops blanks and turns unusable inputs into free error rows', async () => {
    const { def } = createFakeCheck()
    const { env } = createFakeEnv()
    const f = await foldInputs(def as never, ['OK-1', ' ok-1', '\t', 'bad-2', 'BAD-2', 'bad-2', 'voip-3', '', 'ok-1'], { country: null, smtp: null }, env.ctx, 2)
    expect(f.totalRows).toBe(9)
    expect(f.uniqueInputs).toBe(4) // ok-1, bad-2, BAD-2 (an invalid input folds only with its exact repeats), voip-3
    expect(f.skipped).toBe(5)
    expect(f.errors).toBe(2)
    expect([...foldedRows(f)].map((r) => [r.index, r.input, r.state])).toEqual([
      [0, 'OK-1', 'pending'],
      [1, 'bad-2', 'error'],
      [2, 'BAD-2', 'error'],
      [3, 'voip-3', 'pending'],
    ])
    expect(f.errorRows[0]!.error).toBe('INVALID_INPUT: The phone number cannot be parsed.')
    expect(f.errorRows[0]!.retryable).toBe(false)
    expect(f.work.map((w) => [w.index, w.raw, w.input, w.cacheKey])).toEqual([
      [0, 'OK-1', 'ok-1', 'ok-1'],
      [3, 'voip-3', 'voip-3', 'voip-3'],
    ])
  })

  it('folds email addresses by the whole address lower-cased, as docs/bulk.md promises', async () => {
    const { env } = createFakeEnv()
    const inputs = ['Jane@Acme.IO', 'jane@acme.io', 'JANE@acme.io', ' jane@ACME.io ', 'john@acme.io', 'Not An Address', 'not an address']
    const f = await foldInputs(emailCheck as never, inputs, { country: null, smtp: null }, env.ctx)
    expect(f.work.map((w) => w.raw)).toEqual(['Jane@Acme.IO', 'john@acme.io', 'Not An Address'])
    expect(f).toMatchObject({ totalRows: 7, uniqueInputs: 3, skipped: 4 })
  })

  it('makes an input longer than its type takes a free error row, cut at the limit with a surrogate pair kept whole', async () => {
    const { env } = createFakeEnv()
    const long = `a${'\u{1F600}'.repeat(200)}`
    const f = await foldInputs(emailCheck as never, ['jane@acme.io', long], { country: null, smtp: null }, env.ctx)
    expect(f.work.map((w) => w.raw)).toEqual(['jane@acme.io'])
    expect(f.errorRows.map((r) => [r.input, r.error, r.retryable])).toEqual([
      [`a${'\u{1F600}'.repeat(159)}…`, 'INVALID_INPUT: Inputs of type email are at most 320 characters (this one has 401).', false],
    ])
  })

  it('counts a phone number in code points, as the phone lookup does: 40 astral digits are looked up, 41 are not', async () => {
    const { env } = createFakeEnv()
    const digit = '\u{1D7CF}' // MATHEMATICAL BOLD DIGIT ONE: two UTF-16 code units
    const f = await foldInputs(phoneCheck as never, [digit.repeat(40), digit.repeat(41)], { country: null, smtp: null }, env.ctx)
    expect(f.work.map((w) => w.raw)).toEqual([digit.repeat(40)])
    expect(f.errorRows.map((r) => r.error)).toEqual(['INVALID_INPUT: Inputs of type phone are at most 40 characters (this one has 41).'])
  })

  it('passes the job options each lookup type understands', () => {
    expect(lookupOptionsFor('phone', { country: 'GB', smtp: false })).toEqual({ country: 'GB' })
    expect(lookupOptionsFor('phone_type', { country: 'GB', smtp: null })).toEqual({ country: 'GB' })
    expect(lookupOptionsFor('email', { country: 'GB', smtp: false })).toEqual({ smtp: false })
    expect(lookupOptionsFor('email', { country: null, smtp: null })).toEqual({})
    expect(lookupOptionsFor('ip', { country: 'GB', smtp: false })).toEqual({})
  })
})
