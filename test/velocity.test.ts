/**
 * Velocity through the library: the counts of each kind in details.velocity of the single lookups and the combined
 * check (counted once for all parts), the factors past the policy's thresholds per context, test mode counted apart,
 * free providers not counted, only keyed hashes reaching the store, and a failing store answered as partial.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import type { CheckResult } from '../src/schema.js'
import { createPolicy } from '../src/scoring/engine.js'
import { parseAnswerLine } from '../src/scoring/answer-line.js'
import { createBacktest } from '../src/scoring/backtest.js'
import { createMemoryVelocityStore, type VelocityStore } from '../src/velocity/store.js'
import { assertValidResult } from './validate.js'

let now = new Date('2026-11-22T12:00:00Z')
const clock = () => now
const instances: Riskcheck[] = []
const make = (options: Parameters<typeof createRiskcheck>[0] = {}) => {
  const rc = createRiskcheck({ mode: 'test', now: clock, velocity: true, ...options })
  instances.push(rc)
  return rc
}
afterAll(async () => {
  for (const rc of instances) await rc.close()
})

/** A store that keeps every key it is given, in front of an in-memory one. */
function recording(): VelocityStore & { keys: string[] } {
  const inner = createMemoryVelocityStore()
  const keys: string[] = []
  return { keys, hit: (k, t) => (keys.push(...k), inner.hit(k, t)) }
}

describe('details.velocity', () => {
  it('each lookup counts its own kinds; the others are null; without velocity it is null', async () => {
    const rc = make()
    const ip = await rc.ip('192.0.2.1')
    assertValidResult(ip, 'ip')
    expect(ip.details.velocity).toEqual({ ip: { hour: 1, day: 1 }, network: { hour: 1, day: 1 }, email_domain: null, email: null, phone: null })
    expect((await rc.ip('192.0.2.77')).details.velocity).toMatchObject({ ip: { hour: 1, day: 1 }, network: { hour: 2, day: 2 } })
    const email = await rc.email('deliverable@example.com')
    assertValidResult(email, 'email')
    expect(email.details.velocity).toEqual({ ip: null, network: null, email_domain: { hour: 1, day: 1 }, email: { hour: 1, day: 1 }, phone: null })
    expect((await rc.phone('+44 7400 123456')).details.velocity).toMatchObject({ phone: { hour: 1, day: 1 } })
    expect((await rc.phoneType('+447400123456')).details.velocity).toMatchObject({ phone: { hour: 2, day: 2 } })
    expect((await make({ velocity: false }).ip('192.0.2.1')).details.velocity).toBeNull()
    expect((await rc.domainAge('old-domain.example')).details).not.toHaveProperty('velocity')
  })

  it('the same mailbox however written counts as one; a free provider’s domain is not counted', async () => {
    const rc = make({ mode: 'live', offline: true, cache: false })
    await rc.email('Jane.Doe+a@gmail.com')
    const r = await rc.email('janedoe@googlemail.com')
    expect(r.details.velocity).toMatchObject({ email: { hour: 2, day: 2 }, email_domain: null })
    expect((await rc.email('jane@acme-widgets.io')).details.velocity).toMatchObject({ email_domain: { hour: 1, day: 1 } })
  })

  it('IPv6: the network is the /48', async () => {
    const rc = make({ mode: 'live', offline: true, cache: false })
    await rc.ip('2001:db8:1:2::1')
    expect((await rc.ip('2001:db8:1:ffff::9')).details.velocity).toMatchObject({ ip: { hour: 1 }, network: { hour: 2 } })
    expect((await rc.ip('2001:db8:2::1')).details.velocity).toMatchObject({ network: { hour: 1 } })
  })

  it('windows slide: an hour later the hour count starts again, the day count goes on', async () => {
    now = new Date('2026-11-22T12:00:00Z')
    const rc = make()
    for (let i = 0; i < 3; i++) await rc.ip('192.0.2.9')
    now = new Date('2026-11-22T13:00:00Z')
    expect((await rc.ip('192.0.2.9')).details.velocity?.ip).toEqual({ hour: 1, day: 4 })
    now = new Date('2026-11-23T12:00:01Z')
    expect((await rc.ip('192.0.2.9')).details.velocity?.ip).toEqual({ hour: 1, day: 2 })
    now = new Date('2026-11-22T12:00:00Z')
  })

  it('test mode counts in a space of its own', async () => {
    const store = createMemoryVelocityStore()
    const secret = 'a secret of at least 16 characters'
    const test = make({ velocity: { secret, store } })
    const live = make({ mode: 'live', offline: true, cache: false, velocity: { secret, store } })
    await test.ip('192.0.2.1')
    await test.ip('192.0.2.1')
    expect((await live.ip('192.0.2.1')).details.velocity?.ip).toEqual({ hour: 1, day: 1 })
    expect((await test.ip('192.0.2.1')).details.velocity?.ip).toEqual({ hour: 3, day: 3 })
  })
})

describe('velocity factors and the policy', () => {
  it('a count past the threshold fires the factor, with a sentence; thresholds differ by context', async () => {
    const rc = make()
    let r = await rc.check({ ip: '192.0.2.13', context: 'signup' })
    for (let i = 0; i < 5; i++) r = await rc.check({ ip: '192.0.2.13', context: 'signup' })
    assertValidResult(r, 'check')
    expect(r.details.velocity?.ip).toEqual({ hour: 6, day: 6 })
    expect(r.risk.factors).toContain('velocity_ip_high') // signup: more than 5 an hour
    expect(r.verdict.reason).toBe('6 checks from this IP address in the last hour (more than 5).')
    const checkout = await rc.check({ ip: '192.0.2.13', context: 'checkout' })
    expect(checkout.details.velocity?.ip).toEqual({ hour: 7, day: 7 })
    expect(checkout.risk.factors).not.toContain('velocity_ip_high') // checkout: more than 20 an hour
    const single = await rc.ip('192.0.2.13')
    expect(single.risk.factors).not.toContain('velocity_ip_high') // no context: more than 10 an hour
  })

  it("a policy's own velocity limits hold in every context, in place of the contexts' defaults; its own contexts win", async () => {
    // before, the default signup, lead and checkout limits beat the policy's top-level ones: tightening had no effect there
    const rc = make({ scoring: { velocity: { ip: { hour: 2 }, email: { day: 1 } }, contexts: { lead: { velocity: { ip: { hour: 30 } } } } } })
    let r = await rc.check({ ip: '192.0.2.14', email: 'deliverable@example.com', context: 'checkout' })
    for (let i = 0; i < 2; i++) r = await rc.check({ ip: '192.0.2.14', email: 'deliverable@example.com', context: 'checkout' })
    expect(r.details.velocity).toMatchObject({ ip: { hour: 3, day: 3 }, email: { hour: 3, day: 3 } })
    expect(r.risk.factors).toEqual(expect.arrayContaining(['velocity_ip_high', 'velocity_email_high'])) // checkout's defaults: 20 and 50
    const signup = await rc.check({ ip: '192.0.2.14', context: 'signup' })
    expect(signup.risk.factors).toContain('velocity_ip_high')
    const lead = await rc.check({ ip: '192.0.2.14', email: 'deliverable@example.com', context: 'lead' })
    expect(lead.details.velocity?.ip).toEqual({ hour: 5, day: 5 })
    expect(lead.risk.factors).not.toContain('velocity_ip_high') // the policy's lead context: 30 an hour
    expect(lead.risk.factors).toContain('velocity_email_high') // the top level still holds for the windows lead leaves
    // the windows the policy does not name keep the contexts' defaults (signup: network more than 15 an hour)
    expect(createPolicy({ velocity: { ip: { hour: 2 } } }).contexts.signup?.velocity).toMatchObject({ ip: { day: 20 }, network: { hour: 15, day: 60 } })
  })

  it('a check sent again under its checkId counts once, in the default store and in a store of yours', async () => {
    // before, the library had no way to name a check: a retry after a time-out always counted twice
    for (const velocity of [true, { secret: 'y'.repeat(16), store: createMemoryVelocityStore() }] as const) {
      const rc = make({ velocity })
      const first = await rc.check({ ip: '192.0.2.21', email: 'deliverable@example.com', checkId: 'signup-1' })
      const again = await rc.check({ ip: '192.0.2.21', email: 'deliverable@example.com', checkId: 'signup-1' })
      expect(again.details.velocity).toEqual(first.details.velocity)
      expect(again.details.velocity?.ip).toEqual({ hour: 1, day: 1 })
      // the same id with a value it has not counted (another IP): that value is counted, the rest not again
      const other = await rc.check({ ip: '192.0.2.22', email: 'deliverable@example.com', checkId: 'signup-1' })
      expect(other.details.velocity).toMatchObject({ ip: { hour: 1, day: 1 }, email: { hour: 1, day: 1 } })
      // another id, or none, is another check
      expect((await rc.check({ ip: '192.0.2.21', checkId: 'signup-2' })).details.velocity?.ip).toEqual({ hour: 2, day: 2 })
      expect((await rc.ip('192.0.2.21', { checkId: 'ip-1' })).details.velocity?.ip).toEqual({ hour: 3, day: 3 })
      expect((await rc.ip('192.0.2.21', { checkId: 'ip-1' })).details.velocity?.ip).toEqual({ hour: 3, day: 3 })
      expect((await rc.ip('192.0.2.21')).details.velocity?.ip).toEqual({ hour: 4, day: 4 })
    }
    const rc = make()
    for (const bad of ['', 'x'.repeat(201), 42]) {
      await expect(rc.check({ ip: '192.0.2.21', checkId: bad as string })).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('checkId') })
      await expect(rc.ip('192.0.2.21', { checkId: bad as string })).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    }
    // a lookup option that is not a boolean is refused (before, bypassCache: 'false' bypassed the cache and billed)
    await expect(rc.ip('192.0.2.21', { bypassCache: 'false' as never })).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: '`bypassCache` must be a boolean.' })
  })

  it('the combined check counts once for all its parts (a part does not count again)', async () => {
    const rc = make()
    const r = await rc.check({ email: 'deliverable@example.com', ip: '198.51.100.12', phone: '+44 7400 123457' })
    expect(r.details.velocity).toEqual({
      ip: { hour: 1, day: 1 },
      network: { hour: 1, day: 1 },
      email_domain: { hour: 1, day: 1 },
      email: { hour: 1, day: 1 },
      phone: { hour: 1, day: 1 },
    })
    expect(r.details.ip).not.toHaveProperty('velocity')
    expect((await rc.ip('198.51.100.12')).details.velocity?.ip).toEqual({ hour: 2, day: 2 })
  })

  it('a signup burst from one network blocked by a velocity rule in the policy', async () => {
    const rc = make({
      scoring: {
        contexts: {
          signup: {
            velocity: { network: { hour: 3 } },
            rules: [{ name: 'network_burst_blocks', when: { any: ['velocity_network_high'] }, action: 'block', message: 'Block: a burst of sign-ups from one network.' }],
          },
        },
      },
    })
    const actions: string[] = []
    const ips = ['192.0.2.1', '192.0.2.12', '192.0.2.13', '192.0.2.1', '192.0.2.12'] // clean addresses of one /24 (test mode)
    for (let i = 0; i < 5; i++) actions.push((await rc.check({ email: `user${i}@acme-widgets.io`, ip: ips[i], context: 'signup' })).recommendation.action)
    expect(actions).toEqual(['approve', 'approve', 'approve', 'block', 'block'])
  })

  it('the backtest re-derives velocity factors from the stored counts under the candidate policy', async () => {
    const rc = make() // the default policy: signup allows 15 checks an hour from one network
    const answers: CheckResult[] = []
    const ips = ['192.0.2.1', '192.0.2.12', '192.0.2.13']
    for (let i = 0; i < 6; i++) answers.push(await rc.check({ email: `burst${i}@acme-widgets.io`, ip: ips[i % 3], context: 'signup' }))
    expect(answers.map((a) => a.recommendation.action)).toEqual(Array(6).fill('approve'))
    const candidate = createPolicy({
      contexts: {
        signup: {
          velocity: { network: { hour: 3 } },
          rules: [{ name: 'network_burst_blocks', when: { any: ['velocity_network_high'] }, action: 'block' }],
        },
      },
    })
    for (const stored of [JSON.parse(JSON.stringify(answers)), answers.map((a) => parseAnswerLine(JSON.stringify(a)))]) {
      // as objects, and as the lines of a results file (read without their details, but with velocity counts)
      const run = createBacktest(candidate)
      run.add(stored)
      const report = run.report()
      expect(report.matrix.approve.block).toBe(3)
      expect(report.changes.map((c) => [c.candidate.action, c.candidate.rule])).toEqual(Array(3).fill(['block', 'network_burst_blocks']))
    }
  })
})

describe('privacy and failures', () => {
  it('the store sees keyed hashes only, never an input; another secret gives other keys', async () => {
    const a = recording()
    const b = recording()
    await make({ velocity: { secret: 'first secret, 16+ chars', store: a } }).check({ email: 'deliverable@example.com', ip: '192.0.2.1', phone: '+44 7400 123456' })
    await make({ velocity: { secret: 'second secret, 16+ chars', store: b } }).check({ email: 'deliverable@example.com', ip: '192.0.2.1', phone: '+44 7400 123456' })
    expect(a.keys).toHaveLength(5)
    for (const k of a.keys) {
      expect(k).toMatch(/^t[indep]:[A-Za-z0-9_-]{22}$/)
      for (const raw of ['deliverable', 'example', '192.0.2', '7400', '447400']) expect(k).not.toContain(raw)
    }
    expect(a.keys.filter((k) => b.keys.includes(k))).toEqual([])
  })

  it('a store that fails or does not answer in time: velocity null, the answer partial, the lookup still answered', async () => {
    const failing = make({ velocity: { secret: 'x'.repeat(16), store: { hit: () => Promise.reject(new Error('down')) } } })
    const r = await failing.check({ ip: '192.0.2.1' })
    expect([r.details.velocity, r.partial]).toEqual([null, true])
    const single = await failing.ip('192.0.2.1')
    expect([single.details.velocity, single.partial]).toEqual([null, true])
    const slow = make({ velocity: { secret: 'x'.repeat(16), store: { hit: () => new Promise(() => undefined) }, timeoutMs: 20 } })
    expect((await slow.email('deliverable@example.com')).details.velocity).toBeNull()
    // a store whose answer is not a count per key fails alike (before, fewer counts than keys gave every kind null, not partial)
    for (const answer of [[], [{ hour: 1, day: 1 }], 'nope', [{ hour: 1 }, { hour: 1, day: 1 }], [{ hour: -1, day: 1 }, { hour: 1, day: 1 }]]) {
      const odd = make({ velocity: { secret: 'x'.repeat(16), store: { hit: () => answer as never } } })
      const got = await odd.ip('192.0.2.1')
      expect([got.details.velocity, got.partial], JSON.stringify(answer)).toEqual([null, true])
    }
  })

  it('bad options are TypeErrors naming the option', () => {
    expect(() => createRiskcheck({ velocity: { store: createMemoryVelocityStore() } })).toThrow(/`velocity.secret` is required with `velocity.store`/)
    expect(() => createRiskcheck({ velocity: { secret: 'short' } })).toThrow(/`velocity.secret` must be a string of at least 16 characters/)
    expect(() => createRiskcheck({ velocity: { nope: 1 } as never })).toThrow(/`velocity.nope` is not an option/)
    expect(() => createRiskcheck({ velocity: 'yes' as never })).toThrow(/`velocity` must be true, false or an object/)
  })
})
