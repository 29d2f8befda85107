/**
 * Outcomes files: the parser (CSV and JSON lines, every error with its line) and `riskcheck policy test --outcomes`,
 * which labels the offline backtest by them (risk outcomes only, the latest of an input or request wins).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { OutcomesFileError, parseOutcomes, readOutcomesFile } from '../src/outcomes/file.js'
import { foldEntries } from '../src/outcomes/holder.js'
import { labelsFromEntries, resultInputKeys } from '../src/outcomes/labels.js'
import { evaluate, type FactorCode } from '../src/scoring/index.js'
import { memoryIO } from './helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-outcomes-file-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('parseOutcomes()', () => {
  it('reads CSV with a header (quoted cells, CRLF, a BOM) and JSON lines', () => {
    const csv = '\ufeffinput,type,outcome,note,created_at\r\n"jane@example.org",email,chargeback,"dispute, 88",2026-11-01T00:00:00Z\r\n+12015550100,phone,legitimate,,\r\n'
    expect(parseOutcomes(csv, 'csv')).toEqual([
      { input: 'jane@example.org', type: 'email', outcome: 'chargeback', note: 'dispute, 88', at: '2026-11-01T00:00:00Z' },
      { input: '+12015550100', type: 'phone', outcome: 'legitimate', note: null, at: null },
    ])
    expect(parseOutcomes('request_id,outcome\nreq_1,FRAUD\n', 'csv')).toEqual([{ request_id: 'req_1', outcome: 'fraud' }])
    expect(parseOutcomes('{"request_id":"req_1","outcome":"fraud"}\n\n{"input":"192.0.2.1","type":"ip","outcome":"bounced","note":"x"}\n', 'jsonl')).toEqual([
      { request_id: 'req_1', outcome: 'fraud' },
      { input: '192.0.2.1', type: 'ip', outcome: 'bounced', note: 'x' },
    ])
  })

  it('names the line of each kind of error', () => {
    const bad = (text: string, format: 'csv' | 'jsonl') => {
      try {
        parseOutcomes(text, format)
      } catch (e) {
        expect(e).toBeInstanceOf(OutcomesFileError)
        return [(e as OutcomesFileError).line, (e as Error).message]
      }
      throw new Error('no error')
    }
    expect(bad('input,type,outcome\na@b.example,email,fraud\na@b.example,email,maybe\n', 'csv')).toEqual([3, expect.stringMatching(/^line 3: outcome "maybe" is not one of fraud, /)])
    expect(bad('input,type,outcome\na@b.example,,fraud\n', 'csv')).toEqual([2, 'line 2: type is missing (input is given)'])
    expect(bad('input,type,outcome\na@b.example,url,fraud\n', 'csv')).toEqual([2, 'line 2: type "url" is not one of email, phone, ip'])
    expect(bad('a@b.example,email,fraud\n', 'csv')).toEqual([1, expect.stringContaining('unknown column "a@b.example"')])
    expect(bad('{"outcome":"fraud"}\n', 'jsonl')).toEqual([1, 'line 1: needs either request_id, or input with type'])
    expect(bad('{"request_id":"r","outcome":"fraud"}\nnope\n', 'jsonl')).toEqual([2, expect.stringMatching(/^line 2: not JSON/)])
    expect(bad('{"request_id":"r","input":"a","type":"ip","outcome":"fraud"}\n', 'jsonl')).toEqual([1, 'line 1: needs either request_id, or input with type'])
    expect(bad('{"request_id":"r","outcome":"fraud","weight":2}\n', 'jsonl')).toEqual([1, expect.stringContaining('unknown field "weight"')])
    expect(bad('input,type,outcome\na,ip,fraud\n', 'csv')).toEqual([2, 'line 2: input "a" is not an IP address or CIDR network'])
    expect(bad('input,type,outcome,created_at\n192.0.2.1,ip,fraud,yesterday\n', 'csv')).toEqual([2, expect.stringContaining('is not an ISO 8601 date or date-time with Z or an offset')])
  })

  it('labels: risk outcomes only; the later of one subject wins (by created_at)', () => {
    const entries = parseOutcomes(
      'input,type,outcome,created_at\nb@x.example,email,legitimate,2026-11-02T00:00:00Z\nB@x.example,email,fraud,2026-11-01T00:00:00Z\nc@x.example,email,bounced,2026-11-03T00:00:00Z\n',
      'csv',
    )
    const { labels, summary } = labelsFromEntries(entries)
    expect(summary).toEqual({ outcomes: 3, labels: 1, delivery: 1, superseded: 1 })
    expect(labels.get('b@x.example')?.label).toBe('good') // 11-02 is later than 11-01, though earlier in the file
  })

  it('labels follow the order the library applies the same file: a line without a time takes the time before it', () => {
    // a@ was fraud on 2026-02-01, legitimate on 2026-01-01 (listed later); the line of c@ has no time. The lookup
    // (createRiskcheck, --outcomes) keeps a@ fraud; the backtest labelled it good, ordering by line once any line
    // had no time — so a line about another input turned a@'s label around.
    const text = 'input,type,outcome,at\na@x.example,email,fraud,2026-02-01T00:00:00Z\na@x.example,email,legitimate,2026-01-01T00:00:00Z\nc@x.example,email,chargeback,\n'
    const entries = parseOutcomes(text, 'csv')
    expect(foldEntries(entries).sets.fraud.has('email:a@x.example')).toBe(true)
    const { labels } = labelsFromEntries(entries)
    expect([...labels].map(([k, v]) => [k, v.label]).sort()).toEqual([
      ['a@x.example', 'fraud'],
      ['c@x.example', 'fraud'],
    ])
    expect(labelsFromEntries(entries.slice(0, 2)).labels.get('a@x.example')?.label).toBe('fraud')
    // untimed lines before the first time are the earliest; equal times keep the file's order
    const early = parseOutcomes('input,type,outcome,at\nd@x.example,email,fraud,\nd@x.example,email,legitimate,2026-01-01\nd@x.example,email,chargeback,2026-01-01\n', 'csv')
    expect(labelsFromEntries(early).labels.get('d@x.example')?.label).toBe('fraud')
    expect(foldEntries(early).sets.fraud.has('email:d@x.example')).toBe(true)
  })
})

/** A lookup result line as riskcheck writes it, scored by the default policy. */
function line(id: string, input: string, factors: FactorCode[]) {
  const a = evaluate(factors)
  return JSON.stringify({
    request: { id, type: 'email', input, timestamp: '2026-11-01T00:00:00.000Z', processing_time_ms: 1 },
    metadata: {},
    verdict: { status: a.status, reason: a.reason },
    risk: { score: a.score, level: a.level, factors: a.factors, confidence: a.confidence },
    details: {},
    recommendation: { action: a.action, message: a.message },
    partial: false,
  })
}

describe('riskcheck policy test --outcomes', () => {
  const results = join(dir, 'results.jsonl')
  const policy = join(dir, 'vpn.yaml')
  writeFileSync(results, [line('req_a', 'a@x.example', ['ip_vpn']), line('req_b', 'b@x.example', ['ip_vpn']), line('req_c', 'c@x.example', [])].join('\n') + '\n')
  writeFileSync(policy, 'weights: { ip_vpn: 60 }\n') // ip_vpn: approve → verify

  const run = async (...args: string[]) => {
    const io = memoryIO()
    const code = await runCli(['policy', 'test', '--policy', policy, '--results', results, ...args], io)
    return { code, out: io.out(), err: io.err() }
  }

  it('labels by input (CSV) and by request id (JSON lines); delivery outcomes are noted, not labels', async () => {
    const csv = join(dir, 'outcomes.csv')
    writeFileSync(csv, 'input,type,outcome\nA@X.example,email,chargeback\nb@x.example,email,fraud\nb@x.example,email,legitimate\nc@x.example,email,bounced\n')
    const r = await run('--outcomes', csv, '--json')
    expect(r.code, r.err).toBe(0)
    expect(r.err).toContain('1 delivery outcome(s) (bounced, delivered, spam_complaint) are not labels')
    const report = JSON.parse(r.out)
    expect(report.labels).toMatchObject({ given: 2, matched: 2, unmatched: 0 })
    expect(report.labels.fraud.candidate).toEqual({ approve: 0, verify: 1, review: 0, block: 0 })
    expect(report.labels.good.candidate).toEqual({ approve: 0, verify: 1, review: 0, block: 0 })
    expect(report.labels.metrics.candidate.actions.verify).toEqual({ precision: 1 / 2, recall: 1 })
    expect(report.reviewQueue).toEqual({ current: 0, candidate: 0, change: 0, ratio: null })

    const jsonl = join(dir, 'outcomes.jsonl')
    writeFileSync(jsonl, '{"request_id":"req_c","outcome":"account_takeover"}\n{"request_id":"req_gone","outcome":"fraud"}\n')
    expect(await readOutcomesFile(jsonl)).toHaveLength(2)
    const t = await run('--outcomes', jsonl)
    expect(t.code, t.err).toBe(0)
    expect(t.out).toContain('Labels: 2 given; 1 answers labelled (fraud 1, good 0); 1 labels matched no answer (e.g. req_gone)')
    expect(t.out).toContain('Precision and recall for fraud, per action')
  })

  it('finds an answer by its input in the form lookups compare it: Jane.Doe+x@gmail.com reported labels janedoe@gmail.com and Jane.Doe+y@gmail.com', async () => {
    // a lookup of janedoe@gmail.com is marked by that outcome (the lists' normalisation); the backtest compared
    // inputs only case-insensitively, so neither answer was labelled
    const gmail = join(dir, 'gmail.jsonl')
    writeFileSync(gmail, [line('req_g1', 'janedoe@gmail.com', ['ip_vpn']), line('req_g2', 'Jane.Doe+y@gmail.com', ['ip_vpn']), line('req_g3', 'someone@gmail.com', [])].join('\n') + '\n')
    const outcomes = join(dir, 'gmail-outcomes.csv')
    writeFileSync(outcomes, 'input,type,outcome\nJane.Doe+x@gmail.com,email,fraud\n')
    const io = memoryIO()
    const code = await runCli(['policy', 'test', '--policy', policy, '--results', gmail, '--outcomes', outcomes, '--json'], io)
    expect(code, io.err()).toBe(0)
    const report = JSON.parse(io.out())
    expect(report.labels).toMatchObject({ given: 1, matched: 2, unmatched: 0 })
    expect(report.labels.fraud.candidate).toEqual({ approve: 0, verify: 2, review: 0, block: 0 })
    // the service's logged answers (type, input; a combined check's parts joined with ' · ') give the same keys
    expect(resultInputKeys({ type: 'check', input: 'Jane.Doe@gmail.com · 192.0.2.1' }).sort()).toEqual(['192.0.2.1', 'janedoe@gmail.com'])
    expect(resultInputKeys({ request: { type: 'phone', input: '+1 (201) 555-0100' }, details: {} })).toEqual(['+12015550100'])
    // a result with its details: the form the lookup read
    expect(resultInputKeys({ request: { type: 'email', input: 'Jane.Doe+x@gmail.com' }, details: { syntax_valid: true, local_part: 'Jane.Doe+x', domain: 'gmail.com' } })).toEqual(['janedoe@gmail.com'])
  })

  it('a bad outcomes file, or --labels with --outcomes: exit 64 with the reason', async () => {
    const bad = join(dir, 'bad.csv')
    writeFileSync(bad, 'input,type,outcome\nx@y.example,email,stolen\n')
    const r = await run('--outcomes', bad)
    expect(r.code).toBe(64)
    expect(r.err).toContain(`${bad}: line 2: outcome "stolen" is not one of`)
    expect((await run('--outcomes', bad, '--labels', bad)).err).toContain('--labels and --outcomes cannot be used together')
  })
})
