/**
 * Outcomes in the library (no server): `createRiskcheck({ outcomes })` with entries or a loader gives the service's
 * factors by the service's rules (latest per axis wins, delivered clears bounced, legitimate clears fraud; inputs
 * compared as lists compare them); entries by request id are ignored; the same labels recorded on a server and given
 * to the library give the same factors; and the CLI's `--outcomes FILE` (CSV or JSONL).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { isRiskcheckError } from '../src/errors.js'
import type { OutcomeEntry } from '../src/outcomes/file.js'
import { OutcomesError, type OutcomesOption } from '../src/outcomes/holder.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { startTestServer } from './server-helpers.js'

const NOW = new Date('2026-11-22T12:00:00Z')
const instances: Riskcheck[] = []
const make = (outcomes?: OutcomesOption) => {
  const rc = createRiskcheck({ offline: true, now: () => NOW, ...(outcomes !== undefined ? { outcomes } : {}) })
  instances.push(rc)
  return rc
}
afterAll(async () => {
  for (const rc of instances) await rc.close()
})

describe('createRiskcheck({ outcomes })', () => {
  it('gives email_bounced_before and reported_fraud_before, comparing inputs as lists do', async () => {
    const rc = make([
      { input: 'Bounce.Me+news@gmail.com', type: 'email', outcome: 'bounced' },
      { input: '+1 415 555 0199', type: 'phone', outcome: 'chargeback' },
      { input: '203.0.113.9', type: 'ip', outcome: 'fraud' },
      { request_id: 'req_0123456789abcdef01234567', outcome: 'fraud' },
    ])
    const email = await rc.email('bounceme@gmail.com')
    expect(email.risk.factors).toContain('email_bounced_before')
    expect(email.verdict.status).toBe('invalid')
    expect((await rc.phone('+14155550199')).risk.factors).toContain('reported_fraud_before')
    expect((await rc.ip('203.0.113.9')).risk.factors).toContain('reported_fraud_before')
    expect((await rc.ip('203.0.113.10')).risk.factors).not.toContain('reported_fraud_before')
    const check = await rc.check({ email: 'someone@gmail.com', ip: '203.0.113.9' })
    expect(check.risk.factors).toContain('reported_fraud_before')
    expect(rc.outcomesSummary()).toEqual({ entries: 4, ignored: 1, bounced: 1, fraud: 2 })
  })

  it('latest per input and axis wins: delivered clears bounced, legitimate clears fraud, an outcome of the other axis clears neither', async () => {
    const rc = make([
      { input: 'a@gmail.com', type: 'email', outcome: 'bounced' },
      { input: 'a@gmail.com', type: 'email', outcome: 'fraud' },
      { input: 'a@gmail.com', type: 'email', outcome: 'delivered' },
      { input: 'b@gmail.com', type: 'email', outcome: 'bounced' },
      { input: 'b@gmail.com', type: 'email', outcome: 'legitimate' },
      { input: 'd@gmail.com', type: 'email', outcome: 'bounced' },
      { input: 'd@gmail.com', type: 'email', outcome: 'spam_complaint' }, // the address's latest delivery outcome: not a bounce
      { input: 'c@gmail.com', type: 'email', outcome: 'fraud' },
      { input: 'c@gmail.com', type: 'email', outcome: 'legitimate' },
    ])
    const a = (await rc.email('a@gmail.com')).risk.factors
    expect([a.includes('email_bounced_before'), a.includes('reported_fraud_before')]).toEqual([false, true])
    const b = (await rc.email('b@gmail.com')).risk.factors
    expect([b.includes('email_bounced_before'), b.includes('reported_fraud_before')]).toEqual([true, false])
    const c = (await rc.email('c@gmail.com')).risk.factors
    expect([c.includes('email_bounced_before'), c.includes('reported_fraud_before')]).toEqual([false, false])
    expect((await rc.email('d@gmail.com')).risk.factors).not.toContain('email_bounced_before')
  })

  it('entries are ordered by `at` (an entry without one follows the one before it), then as given', async () => {
    const rc = make([
      { input: 'x@gmail.com', type: 'email', outcome: 'delivered', at: '2026-11-02T00:00:00Z' },
      { input: 'x@gmail.com', type: 'email', outcome: 'bounced', at: '2026-11-01T00:00:00Z' },
      { input: 'y@gmail.com', type: 'email', outcome: 'bounced', at: '2026-11-03T00:00:00Z' },
      { input: 'y@gmail.com', type: 'email', outcome: 'delivered' }, // at 2026-11-03 too, given later: wins
    ])
    expect((await rc.email('x@gmail.com')).risk.factors).not.toContain('email_bounced_before')
    expect((await rc.email('y@gmail.com')).risk.factors).not.toContain('email_bounced_before')
  })

  it('a loader: lookups wait for the first load; reloadOutcomes calls it again; a failed first load fails lookups until a reload works', async () => {
    let round = 0
    const rc = make(async () => {
      round++
      await new Promise((r) => setTimeout(r, 20))
      return [{ input: '198.51.100.7', type: 'ip', outcome: round === 1 ? 'fraud' : 'legitimate' }] as OutcomeEntry[]
    })
    expect((await rc.ip('198.51.100.7')).risk.factors).toContain('reported_fraud_before')
    expect(await rc.reloadOutcomes()).toEqual({ entries: 1, ignored: 0, bounced: 0, fraud: 0 })
    expect((await rc.ip('198.51.100.7')).risk.factors).not.toContain('reported_fraud_before')

    const broken = make(async () => Promise.reject(new Error('file gone')))
    const e = await broken.ip('198.51.100.7').catch((x: unknown) => x)
    expect(isRiskcheckError(e, 'UPSTREAM_UNAVAILABLE')).toBe(true)
    expect((e as Error).message).toBe('The outcomes could not be loaded: file gone')
    await broken.reloadOutcomes([{ input: '198.51.100.7', type: 'ip', outcome: 'fraud' }])
    expect((await broken.ip('198.51.100.7')).risk.factors).toContain('reported_fraud_before')
    // an instance without outcomes can be given some later
    const later = make(undefined)
    expect(later.outcomesSummary()).toBeNull()
    await later.reloadOutcomes([{ input: '198.51.100.8', type: 'ip', outcome: 'account_takeover' }])
    expect((await later.ip('198.51.100.8')).risk.factors).toContain('reported_fraud_before')
  })

  it('unusable entries are a TypeError naming each, at createRiskcheck and on reload (the outcomes in force kept)', async () => {
    expect(() => make([{ input: '555-0100', type: 'phone', outcome: 'fraud' }])).toThrow(
      'riskcheck: option `outcomes`: outcomes[0]: input "555-0100" is not in international form (it must start with +)',
    )
    expect(() => make([{ input: '10.0.0.0/8', type: 'ip', outcome: 'fraud' }])).toThrow(OutcomesError)
    expect(() => make([{ input: 'a@gmail.com', type: 'email', outcome: 'stolen' as never }])).toThrow(/outcome "stolen" is not one of/)
    expect(() => make('x' as never)).toThrow(TypeError)
    const rc = make([{ input: '192.0.2.1', type: 'ip', outcome: 'fraud' }])
    await expect(rc.reloadOutcomes([{ outcome: 'fraud' } as OutcomeEntry])).rejects.toBeInstanceOf(OutcomesError)
    expect((await rc.ip('192.0.2.1')).risk.factors).toContain('reported_fraud_before')
  })
})

describe('one rule set: the server and the library give the same factors for the same labels', () => {
  it('labels by input recorded on a server, and given to the library', async () => {
    const labels: OutcomeEntry[] = [
      { input: 'Jane.Doe+x@gmail.com', type: 'email', outcome: 'bounced' },
      { input: 'ring@gmail.com', type: 'email', outcome: 'fraud' },
      { input: 'ring@gmail.com', type: 'email', outcome: 'legitimate' },
      { input: 'back@gmail.com', type: 'email', outcome: 'bounced' },
      { input: 'back@gmail.com', type: 'email', outcome: 'delivered' },
      { input: '+14155550123', type: 'phone', outcome: 'chargeback' },
      { input: '2001:db8::1', type: 'ip', outcome: 'fraud' },
      { input: '192.0.2.44', type: 'ip', outcome: 'account_takeover' },
    ]
    const s = await startTestServer()
    try {
      for (const l of labels) {
        s.tick()
        expect((await s.post('/v1/outcomes', { outcomes: [l] })).status).toBe(200)
      }
      const rc = make(labels)
      const cases: Array<[string, string, Record<string, string>]> = [
        ['email', '/v1/email', { email: 'janedoe@gmail.com' }],
        ['email', '/v1/email', { email: 'ring@gmail.com' }],
        ['email', '/v1/email', { email: 'back@gmail.com' }],
        ['phone', '/v1/phone', { phone: '+1 415 555 0123' }],
        ['ip', '/v1/ip', { ip: '2001:0db8:0:0::1' }],
        ['ip', '/v1/ip', { ip: '192.0.2.44' }],
        ['ip', '/v1/ip', { ip: '192.0.2.45' }],
      ]
      const ours = (f: string[]) => f.filter((c) => c === 'email_bounced_before' || c === 'reported_fraud_before')
      for (const [type, path, body] of cases) {
        s.tick()
        const served = await s.post(path, body)
        expect(served.status).toBe(200)
        const local = await rc.lookup(type as 'email', Object.values(body)[0]!)
        expect([type, body, ours(local.risk.factors)]).toEqual([type, body, ours(served.body.data.risk.factors)])
      }
      const check = await s.post('/v1/check', { email: 'janedoe@gmail.com', phone: '+14155550123' })
      expect(ours((await rc.check({ email: 'janedoe@gmail.com', phone: '+14155550123' })).risk.factors)).toEqual(ours(check.body.data.risk.factors))
    } finally {
      await s.close()
    }
  })
})

describe('the CLI: --outcomes FILE', () => {
  const run = async (args: string[], stdin = '') => {
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    let out = ''
    let err = ''
    stdout.on('data', (d) => (out += d))
    stderr.on('data', (d) => (err += d))
    const code = await runCli(args, { stdin: Readable.from([stdin]), stdout, stderr })
    return { code, out, err }
  }

  it('check, email, phone and ip answer with the outcomes of a CSV or JSONL file; a bad file is a usage error naming its line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-outcomes-'))
    try {
      const csv = join(dir, 'outcomes.csv')
      writeFileSync(csv, 'input,type,outcome,note,at\nbounce.me@gmail.com,email,bounced,"hard bounce, 550",2026-11-01T00:00:00Z\n+14155550199,phone,fraud,,\n')
      const jsonl = join(dir, 'outcomes.jsonl')
      writeFileSync(jsonl, '{"input":"203.0.113.9","type":"ip","outcome":"chargeback"}\n\n{"request_id":"req_1","outcome":"fraud"}\n')
      const factors = (out: string) => JSON.parse(out).risk.factors as string[]
      const email = await run(['email', 'BounceMe@gmail.com', '--offline', '--outcomes', csv])
      expect(email.code, email.err).toBe(0)
      expect(factors(email.out)).toContain('email_bounced_before')
      expect(factors((await run(['phone', '+1 415 555 0199', '--offline', '--outcomes', csv])).out)).toContain('reported_fraud_before')
      expect(factors((await run(['ip', '203.0.113.9', '--offline', '--outcomes', jsonl])).out)).toContain('reported_fraud_before')
      const check = await run(['check', '--ip', '203.0.113.9', '--email', 'x@gmail.com', '--offline', '--outcomes', jsonl])
      expect(factors(check.out)).toContain('reported_fraud_before')
      writeFileSync(csv, 'input,type,outcome\nbounce.me@gmail.com,email,bounced\nnot a phone,phone,fraud\n')
      const bad = await run(['ip', '192.0.2.1', '--offline', '--outcomes', csv])
      expect([bad.code, bad.err]).toEqual([64, `riskcheck: --outcomes: ${csv}: line 3: input "not a phone" is not in international form (it must start with +)\n`])
      const missing = await run(['ip', '192.0.2.1', '--offline', '--outcomes', join(dir, 'none.csv')])
      expect(missing.code).toBe(64)
      expect(missing.err).toMatch(/^riskcheck: --outcomes: cannot read /)
      const txt = await run(['ip', '192.0.2.1', '--offline', '--outcomes', join(dir, 'outcomes.txt')])
      expect(txt.err).toMatch(/\.csv, \.jsonl or \.ndjson/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
