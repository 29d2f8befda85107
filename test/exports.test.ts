import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import * as api from '../src/index.js'
import * as scoring from '../src/scoring/index.js'
import { VERSION } from '../src/version.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'))

describe('public API surface', () => {
  it('exports the public names the README and docs/ document', () => {
    for (const name of ['createRiskcheck', 'RiskcheckError', 'signWebhook', 'verifyWebhook', 'createPolicy', 'evaluate', 'score', 'DEFAULT_POLICY', 'FACTORS'])
      expect(api, name).toHaveProperty(name)
    for (const name of ['createPolicy', 'evaluate', 'score', 'levelOf', 'DEFAULT_POLICY', 'FACTORS', 'FACTOR_CODES'])
      expect(scoring, name).toHaveProperty(name)
    // velocity stores, usable on their own (docs/lists-and-velocity.md "Counter stores")
    for (const name of ['createRedisVelocityStore', 'createMemoryVelocityStore', 'HOUR_MS', 'DAY_MS']) expect(api, name).toHaveProperty(name)
    // policy files and backtests
    for (const name of ['backtest', 'createBacktest', 'loadPolicyFile', 'parsePolicy', 'validatePolicy', 'policyVersion', 'policyJsonSchema', 'readResults', 'readLabels'])
      expect(scoring, name).toHaveProperty(name)
  })
  it('keeps src/version.ts in step with package.json', () => {
    expect(VERSION).toBe(pkg.version)
  })
})

describe('the built package (dist/, built by prepare/pretest)', () => {
  it('every export condition points at a file that exists', () => {
    for (const [sub, conds] of Object.entries(pkg.exports as Record<string, unknown>)) {
      if (typeof conds === 'string') {
        expect(existsSync(`${root}${conds}`), sub).toBe(true)
        continue
      }
      for (const [cond, target] of Object.entries(conds as Record<string, Record<string, string>>))
        for (const file of Object.values(target)) expect(existsSync(`${root}${file}`), `${sub} ${cond} ${file}`).toBe(true)
    }
  })
  it('loads through ESM and CommonJS with the same API', async () => {
    const esm = await import(`${root}dist/index.js`)
    const cjs = createRequire(import.meta.url)(`${root}dist/index.cjs`)
    expect(typeof esm.createRiskcheck).toBe('function')
    expect(typeof cjs.createRiskcheck).toBe('function')
    expect(Object.keys(cjs).sort()).toEqual(Object.keys(esm).sort())
    const esmScoring = await import(`${root}dist/scoring/index.js`)
    expect(esmScoring.evaluate(['ip_tor']).action).toBe('review')
    const cjsScoring = createRequire(import.meta.url)(`${root}dist/scoring/index.cjs`)
    expect(Object.keys(cjsScoring).sort()).toEqual(Object.keys(esmScoring).sort())
    // YAML policy files load through both builds (the yaml parser is imported on first use).
    for (const m of [esmScoring, cjsScoring]) expect((await m.parsePolicy('weights:\n  ip_vpn: 60\n')).policy.weights.ip_vpn).toBe(60)
  })
})
