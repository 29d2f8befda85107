/**
 * `riskcheck bulk` holds each input to its type's single-lookup limit, as the API does: a longer line is an error row
 * naming the limit, never looked up, and written with only its first characters.
 */
import { EventEmitter } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { bulkCommand } from '../src/cli/bulk-command.js'
import type { BulkResultRow } from '../src/schema.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bulk-cli-limits-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function sink() {
  const s = new PassThrough() as PassThrough & { text(): string }
  let buf = ''
  s.on('data', (c) => (buf += String(c)))
  s.text = () => buf
  return s
}

describe('riskcheck bulk: an input longer than its type takes', () => {
  it('is an error row naming the limit (email 320), not looked up, written cut; the input that fits is looked up', async () => {
    const input = join(dir, 'emails.txt')
    const long = `${'x'.repeat(300_000)}@example.org`
    writeFileSync(input, ['jane@example.org', long, 'y'.repeat(321)].join('\n') + '\n')
    const stdout = sink()
    const stderr = sink()
    const code = await bulkCommand.run(['--type', 'email', input, '--offline', '--progress-interval', '0'], { stdin: Readable.from([]), stdout, stderr, signals: new EventEmitter() } as never)
    expect(code, stderr.text()).toBe(0)
    const rows = stdout.text().trimEnd().split('\n').map((l) => JSON.parse(l) as BulkResultRow)
    expect(rows.map((r) => [r.input.length, r.error])).toEqual([
      [16, null],
      [321, 'INVALID_INPUT: Inputs of type email are at most 320 characters (this one has 300,012).'],
      [321, 'INVALID_INPUT: Inputs of type email are at most 320 characters (this one has 321).'],
    ])
    expect(rows[0]!.status).not.toBeNull()
    expect(rows[1]).toMatchObject({ action: null, status: null, credits_used: 0 })
    expect(stderr.text()).toMatch(/errors 2 /)
    expect(stdout.text()).not.toContain('x'.repeat(321))
  })
})
