/**
 * parseOutcomes with generated text (random strings, Unicode, CSV and JSONL made of valid and invalid fields, quotes,
 * line breaks): the answer is a list of entries or an OutcomesFileError with a line inside the text — never another
 * throw — and every entry it returns is one the library accepts. Also fixed cases of both formats.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { OutcomesFileError, parseOutcomes } from '../src/outcomes/file.js'
import { foldEntries } from '../src/outcomes/holder.js'
import { OUTCOME_INPUT_TYPES, OUTCOME_KINDS } from '../src/schema.js'

const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.emailAddress(), fc.ipV4(), fc.ipV6(), fc.constant(''))
const cell = fc.oneof(text, fc.constantFrom(...OUTCOME_KINDS), fc.constantFrom(...OUTCOME_INPUT_TYPES), fc.constant('+14155550100'), fc.constant('"'), fc.constant(','), fc.constant('\n'), fc.constant('2026-11-01T00:00:00Z'))
const quote = (c: string) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)
const columns = fc.subarray(['input', 'type', 'request_id', 'outcome', 'note', 'at', 'extra'])
const csv = fc.oneof(
  text,
  fc.tuple(columns, fc.array(fc.array(cell, { maxLength: 7 }), { maxLength: 5 }), fc.boolean()).map(([cols, rows, quoted]) =>
    [cols.join(','), ...rows.map((r) => r.map((c) => (quoted ? quote(c) : c)).join(','))].join('\n'),
  ),
)
const value = fc.oneof(cell, fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }))
const jsonl = fc.oneof(
  text,
  fc
    .array(fc.oneof(fc.dictionary(fc.constantFrom('input', 'type', 'request_id', 'outcome', 'note', 'at', 'x'), value, { maxKeys: 6 }).map((o) => JSON.stringify(o)), text), { maxLength: 5 })
    .map((lines) => lines.join('\n')),
)

/** Parses, checking the property: entries the library folds, or an OutcomesFileError with a line in the text. */
function check(input: string, format: 'csv' | 'jsonl'): 'entries' | 'error' {
  try {
    const entries = parseOutcomes(input, format)
    expect(() => foldEntries(entries)).not.toThrow()
    return 'entries'
  } catch (e) {
    expect(e).toBeInstanceOf(OutcomesFileError)
    const line = (e as OutcomesFileError).line
    expect(Number.isInteger(line) && line >= 1 && line <= input.split(/\r\n|\r|\n/).length).toBe(true)
    return 'error'
  }
}

describe('parseOutcomes with generated text', () => {
  it('CSV: entries or an OutcomesFileError with its line, never another throw; both reached', () => {
    const seen = { entries: 0, error: 0 }
    fc.assert(fc.property(csv, (t) => void seen[check(t, 'csv')]++), { numRuns: 2000 })
    expect(seen.entries).toBeGreaterThan(0)
    expect(seen.error).toBeGreaterThan(0)
  })

  it('JSONL: entries or an OutcomesFileError with its line, never another throw; both reached', () => {
    const seen = { entries: 0, error: 0 }
    fc.assert(fc.property(jsonl, (t) => void seen[check(t, 'jsonl')]++), { numRuns: 2000 })
    expect(seen.entries).toBeGreaterThan(0)
    expect(seen.error).toBeGreaterThan(0)
  })
})

describe('parseOutcomes: fixed cases', () => {
  it('CSV with a header, quoted fields, CRLF, a BOM and blank lines', () => {
    const t = '\ufeffInput,Type,Outcome,Note,At\r\n"Jane.Doe+x@gmail.com",email,bounced,"550, ""no such user""\nsecond line",2026-11-01T00:00:00Z\r\n\r\n+1 415 555 0100,phone,fraud,,\n'
    expect(parseOutcomes(t, 'csv')).toEqual([
      { input: 'Jane.Doe+x@gmail.com', type: 'email', outcome: 'bounced', note: '550, "no such user"\nsecond line', at: '2026-11-01T00:00:00Z' },
      { input: '+1 415 555 0100', type: 'phone', outcome: 'fraud', note: null, at: null },
    ])
    expect(parseOutcomes('request_id,outcome\nreq_1,chargeback\n', 'csv')).toEqual([{ request_id: 'req_1', outcome: 'chargeback' }])
    expect(parseOutcomes('', 'csv')).toEqual([])
  })

  it('CSV errors name the line of the entry (a quoted line break counts)', () => {
    const err = (t: string) => {
      try {
        parseOutcomes(t, 'csv')
      } catch (e) {
        return [(e as OutcomesFileError).line, (e as Error).message]
      }
      return null
    }
    expect(err('input,type,outcome,note\na@gmail.com,email,fraud,"two\nlines"\nb@gmail.com,email,stolen,\n')).toEqual([
      4,
      'line 4: outcome "stolen" is not one of fraud, legitimate, chargeback, account_takeover, bounced, delivered, spam_complaint',
    ])
    expect(err('input,kind\n')).toEqual([1, 'line 1: unknown column "kind" (columns: input, type, request_id, outcome, note, at)'])
    expect(err('input,type\n')).toEqual([1, 'line 1: the header has no outcome column'])
    expect(err('outcome,request_id,input,type\nfraud,req_1,a@gmail.com,email\n')).toEqual([2, 'line 2: needs either request_id, or input with type'])
    expect(err('outcome,input\nfraud,"open\n')).toEqual([2, 'line 2: a quoted field is not closed'])
    expect(err('outcome,input,type,at\nfraud,1.2.3.4,ip,yesterday\n')).toEqual([2, 'line 2: at "yesterday" is not an ISO 8601 date or date-time with Z or an offset'])
    // without an offset the machine's time zone would place (and order) it: refused; a date or an offset is one instant
    expect(err('outcome,input,type,at\nfraud,1.2.3.4,ip,2026-11-02T05:00:00\n')).toEqual([2, 'line 2: at "2026-11-02T05:00:00" is not an ISO 8601 date or date-time with Z or an offset'])
    expect(err('outcome,input,type,at\nfraud,1.2.3.4,ip,2026-11-02T05:00:00+09:00\nlegitimate,1.2.3.4,ip,2026-11-02\n')).toBeNull()
  })

  it('JSONL: one object a line; wrong types, unknown fields and bad JSON name their line', () => {
    const t = '{"input":"203.0.113.9","type":"ip","outcome":"fraud","note":null}\n\n{"request_id":"req_2","outcome":"legitimate","at":"2026-11-01T10:00:00+02:00"}\n'
    expect(parseOutcomes(t, 'jsonl')).toEqual([
      { input: '203.0.113.9', type: 'ip', outcome: 'fraud', note: null },
      { request_id: 'req_2', outcome: 'legitimate', at: '2026-11-01T10:00:00+02:00' },
    ])
    const line = (x: string) => {
      try {
        parseOutcomes(x, 'jsonl')
      } catch (e) {
        return (e as OutcomesFileError).message
      }
      return null
    }
    expect(line('{"outcome":"fraud","input":"a@gmail.com","type":"email"}\n[1]')).toBe('line 2: not a JSON object')
    expect(line('{"outcome":"fraud","input":"a@gmail.com","type":"email","x":1}')).toBe('line 1: unknown field "x" (fields: input, type, request_id, outcome, note, at)')
    expect(line('{"outcome":"fraud","input":42,"type":"ip"}')).toBe('line 1: input must be a string')
    expect(line('{"outcome":')).toMatch(/^line 1: not JSON/)
  })
})
