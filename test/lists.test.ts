/**
 * Allow/block lists through the library: every lookup and the combined check report their matches and decide by
 * them (block wins), the match is made at answer time (a cached answer meets the lists in force), items expire,
 * lists load from a loader and reload, and unusable values are a TypeError naming them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { createMemoryCache, type CacheEntry, type ResultCache } from '../src/cache.js'
import { isRiskcheckError } from '../src/errors.js'
import { ListsError } from '../src/lists/compile.js'
import type { ListDefinition } from '../src/lists/types.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { assertValidResult } from './validate.js'

const NOW = new Date('2026-11-22T12:00:00Z')
const LISTS: ListDefinition[] = [
  { id: 'fraud', name: 'Fraud rings', kind: 'block', itemType: 'email_domain', items: ['grade-c.example', { value: 'example.net', reason: 'chargebacks' }] },
  { id: 'staff', name: 'Staff', kind: 'allow', itemType: 'email', items: ['Disposable@Example.com'] },
  { id: 'nets', name: 'Bad networks', kind: 'block', itemType: 'ip', items: ['198.51.100.0/24'] },
  { id: 'office', name: 'Office', kind: 'allow', itemType: 'ip', items: ['192.0.2.0/24'] },
  { id: 'phones', name: 'Phones', kind: 'block', itemType: 'phone', items: ['+1 800 234 5678'] },
  { id: 'cc', name: 'Countries', kind: 'block', itemType: 'country', items: [{ value: 'GB', expiresAt: '2026-11-23T00:00:00Z' }] },
]

const instances: Riskcheck[] = []
const make = (options: Parameters<typeof createRiskcheck>[0]) => {
  const rc = createRiskcheck({ mode: 'test', now: () => NOW, ...options })
  instances.push(rc)
  return rc
}
afterAll(async () => {
  for (const rc of instances) await rc.close()
})

describe('every lookup reports and decides by its list matches', () => {
  const rc = make({ lists: LISTS })
  it.each([
    ['email', 'someone@example.net', 'fraud', 'block'],
    ['email', 'disposable@example.com', 'staff', 'approve'], // disposable (review) but on the allow list
    ['ip', '198.51.100.7', 'nets', 'block'],
    ['ip', '192.0.2.1', 'office', 'approve'],
    ['phone', '+1 800 234 5678', 'phones', 'block'],
    ['phone_type', '+18002345678', 'phones', 'block'],
    ['domain_age', 'https://www.grade-c.example/', 'fraud', 'block'],
    ['email_auth', 'grade-c.example', 'fraud', 'block'],
  ] as const)('%s %s → %s, %s', async (type, input, listId, action) => {
    const r = await rc.lookup(type, input)
    assertValidResult(r, type)
    expect(r.details.lists.map((m) => m.list_id)).toContain(listId)
    expect(r.recommendation.action).toBe(action)
    expect(r.risk.factors).toContain(action === 'block' ? 'list_blocked' : 'list_allowed')
  })

  it('a block match says which list and why; an answer without matches has an empty list', async () => {
    const r = await rc.email('someone@example.net')
    expect(r.details.lists).toEqual([{ list_id: 'fraud', name: 'Fraud rings', kind: 'block', item_type: 'email_domain', value: 'example.net' }])
    expect(r.verdict).toEqual({ status: 'risky', reason: 'The email domain is on the block list "Fraud rings" (chargebacks).' })
    expect(r.recommendation.message).toBe('Block: this input is on one of your block lists.')
    const clean = await rc.email('deliverable@example.com')
    expect(clean.details.lists).toEqual([])
    expect(clean.recommendation.action).toBe('approve')
  })

  it('the combined check: each part its own matches, all of them together, and block wins over allow', async () => {
    const r = await rc.check({ email: 'disposable@example.com', ip: '198.51.100.7', context: 'signup' })
    assertValidResult(r, 'check')
    expect(r.details.email!.lists.map((m) => m.list_id)).toEqual(['staff'])
    expect(r.details.ip!.lists.map((m) => m.list_id)).toEqual(['nets', 'cc']) // test mode places it in GB
    expect(r.details.lists.map((m) => m.list_id)).toEqual(['staff', 'nets', 'cc'])
    expect(r.risk.factors).toEqual(expect.arrayContaining(['list_blocked', 'list_allowed']))
    expect(r.recommendation.action).toBe('block')
    const allowed = await rc.check({ email: 'disposable@example.com', ip: '192.0.2.1' })
    expect(allowed.recommendation.action).toBe('approve')
  })

  it('an allow match does not approve an input that cannot be used; without the unusable-input rule it does', async () => {
    // before, an allow-listed domain approved mistyped and non-existent mailboxes (verdict invalid, action approve)
    const domains: ListDefinition[] = [{ id: 'ours', name: 'Our domain', kind: 'allow', itemType: 'email_domain', items: ['example.com'] }]
    const strict = make({ lists: domains })
    for (const input of ['undeliverable@example.com', 'nodomain@example.com']) {
      const r = await strict.email(input)
      expect(r.details.lists.map((m) => m.list_id)).toEqual(['ours'])
      expect([r.verdict.status, r.recommendation.action], input).toEqual(['invalid', 'block'])
    }
    // the other risks an allow match still outweighs: a disposable address at the domain is approved
    expect((await strict.email('disposable@example.com')).recommendation.action).toBe('approve')
    const lenient = make({ lists: domains, scoring: { rules: [] } })
    expect((await lenient.email('undeliverable@example.com')).recommendation.action).toBe('approve')
  })

  it('items expire: a match until expiresAt, none from then on', async () => {
    let now = new Date('2026-11-22T23:59:59Z')
    const timed = make({ lists: LISTS, now: () => now })
    const phone = '+44 7400 123456' // a GB mobile
    expect((await timed.phone(phone)).details.lists.map((m) => m.list_id)).toEqual(['cc'])
    now = new Date('2026-11-23T00:00:00Z')
    expect((await timed.phone(phone)).details.lists).toEqual([])
  })
})

describe('the policy weighs list matches', () => {
  it('lists.allow: null leaves an allow match its weight only, and a rule may use it', async () => {
    const rc = make({
      lists: LISTS,
      scoring: { lists: { allow: null }, rules: [{ name: 'staff_verify', when: { all: ['list_allowed', 'email_disposable'] }, action: 'verify' }, 'unusable_input_blocks'] },
    })
    const r = await rc.email('disposable@example.com')
    expect(r.risk.factors).toContain('list_allowed')
    expect(r.recommendation.action).toBe('verify')
  })

  it('lists.block: review, and a weight for list_blocked', async () => {
    const rc = make({ lists: LISTS, scoring: { lists: { block: 'review' }, weights: { list_blocked: 50 } } })
    const r = await rc.ip('198.51.100.7')
    expect(r.recommendation).toEqual({ action: 'review', message: 'Review: this input is on one of your block lists.' })
  })
})

describe('lists are matched when the answer is given, after the cache', () => {
  it('a cached answer holds no list data and meets the lists in force on the next request', async () => {
    const stored: CacheEntry[] = []
    const memory = createMemoryCache()
    const cache: ResultCache = {
      get: (k, now) => memory.get(k, now),
      set: (k, entry, ttl) => {
        stored.push(entry)
        return memory.set(k, entry, ttl)
      },
    }
    // metered: an offline instance without credits asks no cache (a hit would save nothing)
    const rc = make({ mode: 'live', offline: true, credits: 1000, cache, lists: [] })
    const first = await rc.ip('8.8.8.8')
    expect([first.metadata.cache_hit, first.details.lists]).toEqual([false, []])
    expect(stored).toHaveLength(1)
    expect(stored[0]!.outcome.details).not.toHaveProperty('lists')
    await rc.reloadLists([{ id: 'dns', name: 'Public DNS', kind: 'block', itemType: 'ip', items: ['8.8.8.0/24'] }])
    const second = await rc.ip('8.8.8.8')
    expect(second.metadata.cache_hit).toBe(true)
    expect(second.details.lists.map((m) => m.list_id)).toEqual(['dns'])
    expect(second.recommendation.action).toBe('block')
    await rc.reloadLists([])
    const third = await rc.ip('8.8.8.8')
    expect([third.metadata.cache_hit, third.details.lists, third.risk.factors.includes('list_blocked')]).toEqual([true, [], false])
  })
})

describe('loading and reloading', () => {
  it('a loader: lookups wait for the first load; reloadLists calls it again and switches once compiled', async () => {
    let version = 0
    const loader = async () => {
      version++
      await new Promise((r) => setTimeout(r, 20))
      return [{ id: 'v', name: `v${version}`, kind: 'block' as const, itemType: 'ip' as const, items: version === 1 ? ['192.0.2.1'] : ['192.0.2.2'] }]
    }
    const rc = make({ lists: loader })
    expect((await rc.ip('192.0.2.1')).details.lists.map((m) => m.name)).toEqual(['v1'])
    expect(await rc.reloadLists()).toEqual([{ id: 'v', name: 'v2', kind: 'block', item_type: 'ip', items: 1 }])
    expect((await rc.ip('192.0.2.1')).details.lists).toEqual([])
    expect((await rc.ip('192.0.2.2')).details.lists.map((m) => m.name)).toEqual(['v2'])
    expect(rc.listsSummary()).toEqual([{ id: 'v', name: 'v2', kind: 'block', item_type: 'ip', items: 1 }])
  })

  it('a failed reload keeps the lists in force; a failed first load fails lookups with UPSTREAM_UNAVAILABLE until a reload works', async () => {
    const rc = make({ lists: LISTS })
    await expect(rc.reloadLists([{ name: 'x', kind: 'block', itemType: 'ip', items: ['nope'] }])).rejects.toBeInstanceOf(ListsError)
    expect((await rc.ip('198.51.100.7')).details.lists.map((m) => m.list_id)).toEqual(['nets', 'cc'])

    const broken = make({ lists: async () => Promise.reject(new Error('database down')) })
    const e = await broken.ip('192.0.2.1').catch((x: unknown) => x)
    expect(isRiskcheckError(e, 'UPSTREAM_UNAVAILABLE')).toBe(true)
    expect((e as Error).message).toBe('The allow/block lists could not be loaded: database down')
    await expect(broken.check({ ip: '192.0.2.1' })).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' })
    await broken.reloadLists(LISTS)
    expect((await broken.ip('198.51.100.7')).recommendation.action).toBe('block')
  })

  it('unusable values are a TypeError naming each, at createRiskcheck', () => {
    expect(() => createRiskcheck({ lists: [{ name: 'x', kind: 'block', itemType: 'phone', items: ['+44 20 7946 0958', '555-0100'] }] })).toThrow(
      'riskcheck: option `lists`: lists[0].items[1] "555-0100": not in international form (it must start with +)',
    )
    expect(() => createRiskcheck({ lists: 'x' as never })).toThrow(TypeError)
  })

  it('an instance without lists can be given some later', async () => {
    const rc = make({})
    expect(rc.listsSummary()).toEqual([])
    await rc.reloadLists([{ name: 'later', kind: 'block', itemType: 'asn', items: ['AS15169'] }])
    expect(rc.listsSummary().map((l) => l.items)).toEqual([1])
  })
})

describe('the CLI: --lists FILE', () => {
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

  it('lookups, the combined check and bulk answer with the lists of a YAML or JSON file; a bad file is a usage error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-lists-'))
    try {
      const yaml = join(dir, 'lists.yaml')
      writeFileSync(yaml, '- name: Bad networks\n  kind: block\n  itemType: ip\n  items: [198.51.100.0/24]\n')
      const json = join(dir, 'lists.json')
      writeFileSync(json, JSON.stringify([{ name: 'Staff', kind: 'allow', itemType: 'email_domain', items: ['example.com'] }]))
      const ip = await run(['ip', '198.51.100.7', '--mode', 'test', '--lists', yaml])
      expect(ip.code).toBe(0)
      expect(JSON.parse(ip.out).recommendation.action).toBe('block')
      const check = await run(['check', '--email', 'disposable@example.com', '--mode', 'test', '--lists', json])
      expect(JSON.parse(check.out).details.lists.map((m: { name: string }) => m.name)).toEqual(['Staff'])
      const bulk = await run(['bulk', '--type', 'ip', '--mode', 'test', '--lists', yaml, '--format', 'jsonl', '-'], '198.51.100.7\n192.0.2.1\n')
      expect(bulk.code, bulk.err).toBe(0)
      expect(bulk.out.trim().split('\n').map((l) => JSON.parse(l).action)).toEqual(['block', 'approve'])
      writeFileSync(yaml, '- name: x\n  kind: block\n  itemType: ip\n  items: [nope]\n')
      const bad = await run(['ip', '192.0.2.1', '--mode', 'test', '--lists', yaml])
      expect([bad.code, bad.err]).toEqual([64, 'riskcheck: option `lists`: lists[0].items[0] "nope": not an IP address or CIDR network\n'])
      const missing = await run(['ip', '192.0.2.1', '--mode', 'test', '--lists', join(dir, 'none.yaml')])
      expect(missing.code).toBe(64)
      expect(missing.err).toMatch(/^riskcheck: --lists: cannot read /)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
