/**
 * The answer log keeps each answer's velocity counts, so the backtest of `riskcheck admin policy set` derives the
 * velocity factors again under the candidate's thresholds: five sign-ups from one network, all approved under the
 * defaults (15 an hour), and a candidate allowing 3 an hour with a block rule flips the 4th and 5th to block — while
 * the same rule at the default threshold flips none. Only numbers are logged: no value of the velocity kinds.
 */
import Database from 'better-sqlite3'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAdmin } from '../src/cli/admin-command.js'
import { memoryIO } from './helpers.js'
import { startTestServer } from './server-helpers.js'

let dir: string
let db: string
const policy = (networkHour: number) =>
  [
    'contexts:',
    '  signup:',
    '    velocity:',
    `      network: { hour: ${networkHour} }`,
    '    rules:',
    '      - { name: network_burst_blocks, when: { any: [velocity_network_high] }, action: block }',
    '',
  ].join('\n')

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-log-velocity-'))
  db = join(dir, 'log.sqlite')
  writeFileSync(join(dir, 'three.yaml'), policy(3))
  writeFileSync(join(dir, 'fifteen.yaml'), policy(15))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function dryRun(orgId: string, file: string) {
  const io = memoryIO()
  const code = await runAdmin(['policy', 'set', '--org', orgId, join(dir, file), '--dry-run', '--json', '--db', db], io)
  expect(code, io.err()).toBe(0)
  return JSON.parse(io.out()).backtest
}

describe('velocity counts in the answer log', () => {
  it('a candidate lowering a velocity threshold flips the answers past it in the backtest of policy set', async () => {
    // the server's clock starts at the real time: the backtest below reads the answers of the last 7 days by it
    const s = await startTestServer({ db, testKeyRatePerSecond: 1_000_000, start: new Date().toISOString() })
    const orgId = s.org.id
    const emails: string[] = []
    try {
      for (let i = 1; i <= 5; i++) {
        s.tick(1000)
        const email = `user${i}@acme-corp.com`
        emails.push(email)
        const r = await s.post('/v1/check', { email, ip: `81.2.69.${100 + i}`, context: 'signup' }, s.live)
        expect(r.status, r.raw).toBe(200)
        expect(r.body.data.details.velocity.network.hour).toBe(i)
        expect(r.body.data.recommendation.action).toBe('approve')
      }
    } finally {
      await s.close() // writes the answers still batched
    }
    // numbers only: no email, address or network in the stored counts
    const rows = new Database(db, { readonly: true }).prepare('SELECT velocity FROM org_answers WHERE org_id = ? ORDER BY id').pluck().all(orgId) as string[]
    expect(rows).toHaveLength(5)
    expect(rows[4]).toMatch(/^[0-9,\- ]+$/)

    const three = await dryRun(orgId, 'three.yaml')
    expect(three).toMatchObject({ read: 5, scored: 5, changed: 2 })
    expect(three.matrix.approve.block).toBe(2)
    expect(three.changes.map((c: { input: string; candidate: { action: string } }) => [c.input.split(' · ')[0], c.candidate.action])).toEqual([
      [emails[3], 'block'],
      [emails[4], 'block'],
    ])
    // the same rule at the default threshold: nothing passes it, nothing changes
    expect(await dryRun(orgId, 'fifteen.yaml')).toMatchObject({ read: 5, scored: 5, changed: 0 })
  }, 60_000)
})
