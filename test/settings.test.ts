/**
 * One definition per setting (src/settings.ts) feeds the library's validation and defaults, the CLI's flags and their
 * help, and the table of docs/options.md: these cases walk the table and check each consumer against it, so a setting cannot be
 * defaulted or bounded differently in one of them.
 */
import { describe, expect, it } from 'vitest'
import { resolveOptions, type RiskcheckOptions } from '../src/options.js'
import { GLOBAL_FLAGS, GLOBAL_HELP, optionsFromFlags, UsageError } from '../src/cli/shared.js'
import { SETTINGS, setting, type Setting } from '../src/settings.js'
import { createBulkEngineFor } from '../src/bulk/engine.js'
import { createDnsSource } from '../src/sources/dns.js'
import { resolveSmtpSettings } from '../src/sources/smtp/source-options.js'
import { createRiskcheck } from '../src/index.js'

/** `{ dns: { timeoutMs: v } }` for `dns.timeoutMs`. */
function optionsWith(path: string, value: unknown): RiskcheckOptions {
  const o: Record<string, unknown> = {}
  const keys = path.split('.')
  let at = o
  for (const k of keys.slice(0, -1)) at = (at[k] = {}) as Record<string, unknown>
  at[keys[keys.length - 1]!] = value
  return o as RiskcheckOptions
}

const get = (o: unknown, path: string): unknown => path.split('.').reduce<unknown>((at, k) => (at as Record<string, unknown> | undefined)?.[k], o)

const integers = SETTINGS.filter((s) => s.kind === 'integer')
/** Integer settings `resolveOptions` returns (the cache and bulk ones are read where they are used). */
const resolvedIntegers = integers.filter((s) => !s.path.startsWith('cache.') && !s.path.startsWith('bulk.'))

describe('settings table', () => {
  it('has one entry per path, every top-level option documented', () => {
    expect(new Set(SETTINGS.map((s) => s.path)).size).toBe(SETTINGS.length)
    const tops = new Set(SETTINGS.map((s) => s.path.split('.')[0]))
    for (const option of ['mode', 'offline', 'dns', 'smtp', 'rdap', 'ip', 'phone', 'cache', 'now', 'scoring', 'credits', 'partTimeoutMs', 'bulk', 'onWarning', 'dataDir', 'dataCheckIntervalMs'])
      expect(tops.has(option), option).toBe(true)
    for (const s of integers) expect([s.path, typeof s.min, typeof s.max, typeof s.default]).toEqual([s.path, 'number', 'number', 'number'])
  })

  it.each(resolvedIntegers.map((s) => [s.path, s] as const))('%s: createRiskcheck defaults and bounds come from the table', (path, s) => {
    expect(get(resolveOptions({}), path)).toBe(s.default)
    expect(get(resolveOptions(optionsWith(path, s.min)), path)).toBe(s.min)
    expect(get(resolveOptions(optionsWith(path, s.max)), path)).toBe(s.max)
    const message = `option \`${path}\` must be a whole number from ${s.min} to ${s.max}`
    expect(() => resolveOptions(optionsWith(path, s.max! + 1))).toThrow(message)
    expect(() => resolveOptions(optionsWith(path, s.min! - 1))).toThrow(message)
    expect(() => resolveOptions(optionsWith(path, 1.5))).toThrow(TypeError)
  })

  it('the other readers use the same defaults and wording: bulk engine, cache, DNS and SMTP sources', () => {
    expect(() => createBulkEngineFor({}, {} as never, { concurrency: setting('bulk.concurrency').max! + 1 })).toThrow(
      `option \`bulk.concurrency\` must be a whole number from 1 to ${setting('bulk.concurrency').max}`,
    )
    expect(() => createRiskcheck({ cache: { ttlSeconds: 0 } })).toThrow('option `cache.ttlSeconds` must be a whole number from 1 to')
    expect(() => createDnsSource({ timeoutMs: 0 })).toThrow('riskcheck: option `dns.timeoutMs` must be a number ≥ 1')
    expect(() => resolveSmtpSettings({ port: 0 })).toThrow('riskcheck: option `smtp.port` must be a number ≥ 1')
    const smtp = resolveSmtpSettings({})
    expect([smtp.port, smtp.heloName, smtp.connectTimeoutMs, smtp.replyTimeoutMs, smtp.totalTimeoutMs, smtp.maxPerHost, smtp.maxRejections]).toEqual([
      setting('smtp.port').default,
      setting('smtp.heloName').default,
      setting('smtp.timeoutMs').default,
      setting('smtp.timeoutMs').default,
      setting('smtp.totalTimeoutMs').default,
      setting('smtp.maxConnectionsPerHost').default,
      setting('smtp.maxRejectionsPerSession').default,
    ])
    expect(resolveOptions({}).smtp.mailFrom).toBe(`verify@${setting('smtp.heloName').default}`)
  })
})

describe('CLI flags come from the table', () => {
  const flagged = SETTINGS.filter((s): s is Setting & { flag: string } => s.flag !== undefined)

  it('every setting flag is a lookup flag with a help line naming its default', () => {
    for (const s of flagged) {
      expect(GLOBAL_FLAGS[s.flag], s.flag).toBeDefined()
      const line = GLOBAL_HELP.find(([name]) => name.startsWith(`--${s.flag}`))
      expect(line, s.flag).toBeDefined()
      if (s.kind === 'integer') expect(line![1]).toContain(`(default: ${s.default})`)
    }
  })

  it.each(flagged.filter((s) => s.kind === 'integer').map((s) => [s.flag, s] as const))('--%s sets its option and refuses what the library refuses', (flag, s) => {
    expect(get(optionsFromFlags({ [flag]: String(s.max) }), s.path)).toBe(s.max)
    expect(() => optionsFromFlags({ [flag]: String(s.max! + 1) })).toThrow(UsageError)
    expect(() => optionsFromFlags({ [flag]: String(s.max! + 1) })).toThrow(`--${flag} must be a whole number from ${s.min} to ${s.max}`)
    expect(() => optionsFromFlags({ [flag]: 'soon' })).toThrow(`--${flag} must be a whole number`)
  })

  it('booleans, lists, strings and the clock map to their option paths', () => {
    const o = optionsFromFlags({
      offline: true,
      'no-rdap': true,
      'dns-server': ['127.0.0.1:5353', '[::1]:53'],
      helo: 'mx.example.org',
      'city-db': '/tmp/city.mmdb',
      mode: 'test',
      now: '2026-01-02T03:04:05Z',
    })
    expect(o).toMatchObject({
      offline: true,
      rdap: { enabled: false },
      dns: { servers: ['127.0.0.1:5353', '[::1]:53'] },
      smtp: { heloName: 'mx.example.org' },
      ip: { cityDb: '/tmp/city.mmdb' },
      mode: 'test',
    })
    expect(o.now!().toISOString()).toBe('2026-01-02T03:04:05.000Z')
    expect(() => resolveOptions(o)).not.toThrow()
    expect(() => optionsFromFlags({ helo: 'bad name' })).toThrow('--helo must be a host name (got "bad name")')
    expect(() => optionsFromFlags({ 'rdap-bootstrap-url': 'not a url' })).toThrow('--rdap-bootstrap-url must be an absolute URL')
    expect(() => optionsFromFlags({ mode: 'prod' })).toThrow("--mode must be one of 'live', 'test' (got \"prod\")")
  })

  it('RISKCHECK_DATA_DIR stands in for --data-dir', () => {
    expect(optionsFromFlags({}, { RISKCHECK_DATA_DIR: '/srv/data' }).dataDir).toBe('/srv/data')
    expect(optionsFromFlags({ 'data-dir': '/a' }, { RISKCHECK_DATA_DIR: '/srv/data' }).dataDir).toBe('/a')
  })
})
