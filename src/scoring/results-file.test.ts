import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { createResultsCsv } from '../bulk/csv.js'
import { errorRow, pendingRow } from '../bulk/fold.js'
import type { BulkRowRecord } from '../bulk/types.js'
import { LabelsFileError, readLabels, readResults, ResultsFileError } from './results-file.js'
import { toStoredAnswer } from './stored-answer.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-results-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}

const row = (index: number, input: string, action: BulkRowRecord['action'], factors: string[], reason: string): BulkRowRecord => ({
  ...pendingRow(index, input),
  state: 'done',
  action,
  status: 'risky',
  reason,
  risk_score: 40,
  credits_used: 1,
  factors,
  details: { e164: input, country: 'US', valid: true, line_type: 'voip', numbering_plan_type: 'VOIP' },
})

const rows: BulkRowRecord[] = [
  row(0, '+12015550100', 'verify', ['phone_voip'], 'The number is a VoIP (virtual) number.'),
  row(1, '=HYPERLINK("http://x.example")', 'approve', [], 'A reason, with a comma and "quotes"\nand a line break.'),
  row(2, 'zoë@exämple.com', 'review', ['phone_voip', 'phone_country_mismatch'], 'Ünïcödé reason.'),
  errorRow(3, 'not a number', 'INVALID_INPUT: cannot parse', false),
]

async function csvText(): Promise<string> {
  let s = ''
  for await (const chunk of createResultsCsv('phone', (async function* () {
    yield rows
  })()))
    s += String(chunk)
  return s
}

describe('readResults()', () => {
  it('reads a results.csv as the rows it was written from (formula escaping undone, quoted fields, the factors column)', async () => {
    const csv = await csvText()
    const fromCsv = (await all(readResults(Readable.from([csv]), { format: 'csv' }))).map(toStoredAnswer)
    const fromJson = rows.map((r) => toStoredAnswer(JSON.parse(JSON.stringify(r))))
    expect(fromCsv).toEqual(fromJson)
    expect(fromCsv[0]).toMatchObject({ input: '+12015550100', factors: ['phone_voip'], action: 'verify', score: 40 })
    expect(fromCsv[3]).toBe('error')
  })

  it('gives the same items whatever the chunking, also inside a multi-byte character', async () => {
    const bytes = Buffer.from(await csvText())
    const whole = await all(readResults(Readable.from([bytes]), { format: 'csv' }))
    for (let cut = 1; cut < bytes.length; cut += 7) {
      const parts = [bytes.subarray(0, cut), bytes.subarray(cut)]
      expect(await all(readResults(Readable.from(parts), { format: 'csv' })), `cut at ${cut}`).toEqual(whole)
    }
    const jsonl = Buffer.from(rows.map((r) => JSON.stringify(r)).join('\r\n'))
    const items = await all(readResults(Readable.from([jsonl])))
    for (let cut = 1; cut < jsonl.length; cut += 11)
      expect(await all(readResults(Readable.from([jsonl.subarray(0, cut), jsonl.subarray(cut)]))), `cut at ${cut}`).toEqual(items)
  })

  it('refuses a results.csv without the factors column, and a CSV that is not riskcheck’s', async () => {
    const old = 'input,action,status,reason,risk_score,credits_used,cache_hit,error,e164\n+12015550100,verify,risky,r,40,1,false,,+12015550100\n'
    await expect(all(readResults(Readable.from([old]), { format: 'csv' }))).rejects.toThrow(ResultsFileError)
    await expect(all(readResults(Readable.from([old]), { format: 'csv' }))).rejects.toThrow(/no factors column/)
    await expect(all(readResults(Readable.from(['name,email\nJane,jane@x.example\n'])))).rejects.toThrow(/not a riskcheck results\.csv/)
    await expect(all(readResults(Readable.from(['input,action,factors\n"open,verify,\n'])))).rejects.toThrow(/^line 2: the CSV ends inside a quoted field/)
    // A stray quote does not take the rest of a big file into one record.
    const runaway = ['input,action,factors\n"stray,verify,\n', ...Array.from({ length: 3000 }, (_, i) => `u${i}@x.example,approve,${'x'.repeat(400)}\n`)]
    await expect(all(readResults(Readable.from(runaway), { format: 'csv' }))).rejects.toThrow(/^line 2: a quoted field runs on for more than 1048576 characters/)
  })

  it('reads JSON lines (skipping and reporting a bad line), one pretty-printed document, or an array', async () => {
    const bad: number[] = []
    const lines = ['{"input":"a","factors":[],"action":"approve"}', '', '{"input":"b", oops', '{"input":"c","factors":["ip_vpn"],"action":"approve"}']
    const items = await all(readResults(Readable.from([lines.join('\n')]), { onBadLine: (n) => bad.push(n) }))
    expect(items).toEqual([{ input: 'a', factors: [], action: 'approve' }, undefined, { input: 'c', factors: ['ip_vpn'], action: 'approve' }])
    expect(bad).toEqual([3])
    const broken = await all(readResults(Readable.from(['{"input":"a", oops\n' + lines[0] + '\n' + lines[3] + '\n']), { onBadLine: (n) => bad.push(n) }))
    expect(broken).toEqual([undefined, { input: 'a', factors: [], action: 'approve' }, { input: 'c', factors: ['ip_vpn'], action: 'approve' }])
    expect(bad).toEqual([3, 1])
    const pretty = JSON.stringify({ input: 'p', factors: [], action: 'approve' }, null, 2)
    expect(await all(readResults(Readable.from([pretty])))).toEqual([{ input: 'p', factors: [], action: 'approve' }])
    const array = JSON.stringify([{ input: 'x', factors: [], action: 'approve' }], null, 2)
    expect(await all(readResults(Readable.from([array])))).toEqual([[{ input: 'x', factors: [], action: 'approve' }]])
  })

  it('reads files by path, telling CSV from JSON by the name or, without one, by the first character', async () => {
    const csvPath = join(dir, 'results.csv')
    writeFileSync(csvPath, await csvText())
    const jsonPath = join(dir, 'results.jsonl')
    writeFileSync(jsonPath, rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
    const noName = join(dir, 'results.txt')
    writeFileSync(noName, await csvText())
    const a = (await all(readResults(csvPath))).map(toStoredAnswer)
    expect((await all(readResults(jsonPath))).map(toStoredAnswer)).toEqual(a)
    expect((await all(readResults(noName))).map(toStoredAnswer)).toEqual(a)
  })
})

describe('readLabels()', () => {
  it('reads input,label with or without a header, any case, formula-escaped inputs', async () => {
    const labels = await readLabels(Readable.from(['\uFEFFlabel,input\r\nFRAUD,Bad@X.example\r\ngood,"\'+12015550100"\r\n\r\n']))
    expect([...labels]).toEqual([
      ['bad@x.example', 'fraud'],
      ['+12015550100', 'good'],
    ])
    expect([...(await readLabels(Readable.from(['a@x.example,good\nb@x.example,fraud\n'])))]).toEqual([
      ['a@x.example', 'good'],
      ['b@x.example', 'fraud'],
    ])
  })

  it('names the line of a bad label or of an input labelled both ways', async () => {
    await expect(readLabels(Readable.from(['input,label\na@x.example,good\nb@x.example,maybe\n']))).rejects.toThrow(
      new LabelsFileError('the label must be fraud or good (got "maybe")', 3),
    )
    await expect(readLabels(Readable.from(['a@x.example,good\nA@x.example,fraud\n']))).rejects.toThrow(/^line 2: "A@x.example" is labelled fraud here and good on line 1$/)
    await expect(readLabels(Readable.from(['a@x.example,good\na@x.example,good\n']))).resolves.toHaveProperty('size', 1)
  })
})
