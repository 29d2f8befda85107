/**
 * `riskcheck bulk` end to end on files, with the real phone and IP checks (offline, or against a loopback DNS server),
 * fake stdio streams and a fake signal source for Ctrl-C.
 */
import { EventEmitter } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { readCsvRecords } from '../src/bulk/csv.js'
import { bulkCommand } from '../src/cli/bulk-command.js'
import { BulkJobSchema, BulkResultRowSchema, type BulkJob, type BulkResultRow } from '../src/schema.js'
import { startDnsServer } from './fake-internet/dns-server.js'
import { schemaErrors } from './validate.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bulk-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function sink(tty = false) {
  const s = new PassThrough() as PassThrough & { isTTY?: boolean; columns?: number; text(): string }
  let buf = ''
  s.on('data', (c) => (buf += String(c)))
  s.text = () => buf
  if (tty) {
    s.isTTY = true
    s.columns = 120
  }
  return s
}

async function run(args: string[], opts: { stdin?: string; tty?: boolean; onStderr?: (text: string) => void; signals?: EventEmitter } = {}) {
  const stdout = sink()
  const stderr = sink(opts.tty)
  if (opts.onStderr) stderr.on('data', () => opts.onStderr!(stderr.text()))
  const stdin = Readable.from(opts.stdin === undefined ? [] : [opts.stdin])
  const code = await bulkCommand.run(args, { stdin, stdout, stderr, signals: opts.signals ?? new EventEmitter() } as never)
  return { code, stdout: stdout.text(), stderr: stderr.text() }
}

async function csvOf(text: string): Promise<Array<Record<string, string>>> {
  const recs: string[][] = []
  for await (const r of readCsvRecords(Readable.from([text]))) recs.push(r)
  const [head, ...rows] = recs
  return rows.map((r) => Object.fromEntries(head!.map((h, i) => [h, r[i] ?? ''])))
}

const PHONES = ['+14155552671', '+1 415-555-2671', '', '+44 20 7946 0958', 'hello', '(415) 555-0132', '+14155552671']

describe('riskcheck bulk', () => {
  it('checks a text file of phone numbers offline and writes CSV in input order; the job goes to stdout', async () => {
    const input = join(dir, 'phones.txt')
    const out = join(dir, 'phones.csv')
    writeFileSync(input, PHONES.join('\n') + '\n')
    const r = await run(['--type', 'phone', input, '--offline', '--country', 'US', '--out', out, '--name', 'leads'])
    expect(r.stderr).toMatch(/riskcheck bulk: 4\/4 \(100%\)/)
    expect(r.stderr).toMatch(/completed — 7 inputs, 4 unique/)
    expect(r.code).toBe(0)
    const job = JSON.parse(r.stdout) as BulkJob
    expect(schemaErrors(BulkJobSchema, job)).toEqual([])
    expect(job).toMatchObject({ name: 'leads', type: 'phone', status: 'completed', total_rows: 7, unique_inputs: 4, processed: 4 })
    expect(job.results.skipped).toBe(3) // a blank line and two spellings of +14155552671
    expect(job.results.block).toBe(1) // hello
    const rows = await csvOf(readFileSync(out, 'utf8'))
    // phone numbers stay data (no formula prefix), so the file re-imports as it was written
    expect(rows.map((x) => x.input)).toEqual(['+14155552671', '+44 20 7946 0958', 'hello', '(415) 555-0132'])
    expect(rows[0]).toMatchObject({ action: 'approve', status: 'valid', e164: '+14155552671', international_format: '+1 415 555 2671', valid: 'true', cache_hit: 'false', error: '' })
    expect(rows[2]).toMatchObject({ action: 'block', status: 'invalid', valid: 'false', credits_used: '0' })
    expect(rows[3]!['country.code']).toBe('US')
    expect(Object.keys(rows[0]!)).toContain('carrier.name')
  })

  it('drops a UTF-8 byte order mark before the first line of a plain file, as for CSV (it made row 1 an error before)', async () => {
    const input = join(dir, 'bom.txt')
    writeFileSync(input, '\uFEFF8.8.8.8\n1.1.1.1\n')
    const r = await run(['--type', 'ip', input, '--offline', '--progress-interval', '0'])
    expect(r.code).toBe(0)
    const rows = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as BulkResultRow)
    expect(rows.map((x) => [x.input, x.error])).toEqual([
      ['8.8.8.8', null],
      ['1.1.1.1', null],
    ])
  })

  it('reads a CSV column from stdin and writes JSON lines to stdout', async () => {
    const csv = 'id,ip,note\n1,8.8.8.8,"first, quoted"\n2,"10.0.0.1",x\n3,not-an-ip,y\n4,8.8.8.8,dup\n'
    const r = await run(['--type', 'ip', '-', '--column', 'ip', '--offline', '--progress-interval', '0'], { stdin: csv })
    expect(r.code).toBe(0)
    const rows = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as BulkResultRow)
    for (const row of rows) expect(schemaErrors(BulkResultRowSchema, row)).toEqual([])
    expect(rows.map((x) => x.input)).toEqual(['8.8.8.8', '10.0.0.1', 'not-an-ip'])
    expect(rows[0]!.details).toMatchObject({ ip: '8.8.8.8', location: { country_code: 'US' } })
    expect(rows[1]).toMatchObject({ status: 'invalid', action: 'review' }) // a private (bogon) address
    expect(rows[2]).toMatchObject({ action: null, credits_used: 0 })
    expect(rows[2]!.error).toMatch(/^INVALID_INPUT: Not an IP address/)
  })

  it('refuses a CSV whose quote is never closed (exit 64, no job) instead of making the rest of the file one input', async () => {
    const r = await run(['--type', 'ip', '-', '--column', 'ip', '--offline'], { stdin: 'ip,note\n"8.8.8.8,a\n1.1.1.1,b\n9.9.9.9,c\n' })
    expect(r.code).toBe(64)
    expect(r.stderr).toContain('a quoted field of the CSV is never closed (the one starting "8.8.8.8,a")')
    expect(r.stdout).toBe('')
  })

  it('refuses a CSV with a field longer than 65,536 characters (exit 64, no job), naming where it starts, instead of cutting it', async () => {
    // a stray quote on line 3 swallows the lines after it until a quote 70,000 characters on closes it
    const swallowed = '9.9.9.9,x\n'.repeat(7000)
    const stdin = `ip,note\n8.8.8.8,ok\n1.1.1.1,"oops\n${swallowed}end"\n2.2.2.2,fine\n`
    const r = await run(['--type', 'ip', '-', '--column', 'ip', '--offline'], { stdin })
    expect(r.stderr).toContain('a field of the CSV is longer than 65,536 characters (record 3, from line 3, starting "oops")')
    expect(r.code).toBe(64)
    expect(r.stdout).toBe('')
    // a file read in pieces is refused the same way
    const input = join(dir, 'long-field.csv')
    writeFileSync(input, stdin)
    const file = await run(['--type', 'ip', input, '--offline'])
    expect(file.code).toBe(64)
    expect(file.stderr).toContain('(record 3, from line 3, starting "oops")')
  })

  it('guesses the column named after the type, and never lets an input become a spreadsheet formula', async () => {
    const input = join(dir, 'ips.csv')
    const out = join(dir, 'ips-out.csv')
    writeFileSync(input, 'name,IP\r\nevil,"=HYPERLINK(""http://evil.example"",""x"")"\r\nok,1.1.1.1\r\n')
    const r = await run(['--type', 'ip', input, '--offline', '--out', out])
    expect(r.code).toBe(0)
    const text = readFileSync(out, 'utf8')
    expect(text).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`)
    const rows = await csvOf(text)
    expect(rows[0]!.input).toBe(`'=HYPERLINK("http://evil.example","x")`)
    expect(rows[0]!.error).toMatch(/^INVALID_INPUT/)
    expect(rows[1]).toMatchObject({ input: '1.1.1.1', action: 'approve', 'location.country_code': 'AU' })
  })

  it('draws a progress bar on a terminal', async () => {
    const r = await run(['--type', 'phone_type', '-', '--offline', '--format', 'csv'], { stdin: '+14155552671\n+442079460958\n', tty: true })
    expect(r.code).toBe(0)
    expect(r.stderr).toMatch(/bulk \[.*\] 100% \| 2\/2 \| [\d,]+\/s \| ETA/)
    expect(r.stdout.split('\n')[0]).toBe('input,action,status,reason,risk_score,credits_used,cache_hit,error,factors,e164,country,valid,line_type,numbering_plan_type,lists')
  })

  it('rejects bad usage with exit code 64 and a too-large or empty job with the error code', async () => {
    expect((await run(['--type', 'fax', '-'])).code).toBe(64)
    expect((await run(['-'])).stderr).toMatch(/--type must be one of/)
    expect((await run(['--type', 'ip', 'a', 'b'])).code).toBe(64)
    expect((await run(['--type', 'ip', join(dir, 'missing.txt')])).code).toBe(64)
    expect((await run(['--type', 'ip', '--format', 'xml', '-'])).code).toBe(64)
    const unwritable = await run(['--type', 'ip', '-', '--offline', '--out', join(dir, 'no-such-dir', 'x.csv')], { stdin: '1.1.1.1\n' })
    expect(unwritable.code).toBe(64)
    expect(unwritable.stderr).toMatch(/cannot write/)
    const many = await run(['--type', 'ip', '-', '--column', 'nope'], { stdin: 'ip,x\n1.1.1.1,2\n' })
    expect(many.code).toBe(64)
    expect(many.stderr).toMatch(/no column "nope".*columns: ip, x/)
    const ambiguous = await run(['--type', 'phone', join(dir, 'ips.csv')])
    expect(ambiguous.stderr).toMatch(/pick one with --column/)
    const empty = await run(['--type', 'ip', '-', '--offline'], { stdin: '' })
    expect(empty.code).toBe(2)
    expect(JSON.parse(empty.stderr.trim().split('\n').pop()!)).toMatchObject({ error: { code: 'INVALID_INPUT' } })
    expect((await run(['--help'])).stdout).toMatch(/Usage: riskcheck bulk --type TYPE/)
  })

  it('Ctrl-C cancels cleanly: inputs not reached are skipped and the rows done so far are written', async () => {
    // Reverse DNS answers at once for 8.8.8.x and never for 9.9.9.x, so those rows hang until Ctrl-C.
    const dns = await startDnsServer({
      zones: {
        '*.in-addr.arpa': { PTR: ['host.example.net'] },
        '*.9.9.9.in-addr.arpa': { behaviour: 'timeout' },
      },
    })
    try {
      const input = join(dir, 'slow.txt')
      const out = join(dir, 'slow.jsonl')
      const ips = ['8.8.8.1', '8.8.8.2', '9.9.9.1', '9.9.9.2', '8.8.8.3', '8.8.8.4', '8.8.8.5']
      writeFileSync(input, ips.join('\n'))
      const signals = new EventEmitter()
      const hung = () => ['1.9.9.9.in-addr.arpa', '2.9.9.9.in-addr.arpa'].every((n) => dns.queries.some((q) => q.name.toLowerCase() === n))
      const timer = setInterval(() => {
        if (hung()) {
          clearInterval(timer)
          signals.emit('SIGINT')
        }
      }, 10)
      const r = await run(
        ['--type', 'ip', input, '--dns-server', dns.address, '--dns-timeout', '2000', '--concurrency', '2', '--out', out, '--progress-interval', '0'],
        { signals },
      )
      clearInterval(timer)
      expect(r.code).toBe(130)
      expect(r.stderr).toMatch(/cancelling/)
      const job = JSON.parse(r.stdout) as BulkJob
      expect(job).toMatchObject({ status: 'cancelled', unique_inputs: 7, processed: 2 })
      const rows = readFileSync(out, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as BulkResultRow)
      expect(rows.map((x) => x.input)).toEqual(['8.8.8.1', '8.8.8.2'])
      expect(rows[0]!.details).toMatchObject({ reverse_dns: 'host.example.net' })
      // nothing after the hung rows was looked up
      expect(dns.queries.some((q) => q.name.startsWith('3.8.8.8'))).toBe(false)
      expect(signals.listenerCount('SIGINT')).toBe(0)
    } finally {
      await dns.close()
    }
  })
})
