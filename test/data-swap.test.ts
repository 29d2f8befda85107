/**
 * Swapping data sets under load: many concurrent lookups (IP, email and combined checks) while the data directory's
 * pointer flips between two sets and the instance reloads. Every answer must come entirely from one set — its facts
 * and its data_sources versions agree — and no answer may fail; a replaced set's data is freed.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CacheEntry, ResultCache } from '../src/cache.js'
import { switchPointer } from '../src/data/store.js'
import { updateData } from '../src/data/update.js'
import { createRiskcheck } from '../src/index.js'
import { listSharedIpParts } from '../src/sources/ip/ip-data.js'
import { disposableLists, startDataUpstream, torList, type DataUpstream } from './fake-internet/data-upstream.js'

const EXIT = '81.2.69.160'
const DOMAIN = 'quickdrop-inbox.net'
let upstream: DataUpstream
let dir: string
const sets = { a: '', b: '' }
const labels = { a: { tor: '', disposable: '' }, b: { tor: '', disposable: '' } }

beforeAll(async () => {
  upstream = await startDataUpstream({ month: '2026-11' })
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-swap-'))
  const run = async (day: string) =>
    updateData({ dataDir: dir, only: ['tor', 'disposable'], now: () => new Date(`${day}T06:00:00Z`), sources: upstream.sources(), sleep: async () => {} })
  upstream.set('/tor/torbulkexitlist', { body: torList() })
  sets.a = (await run('2026-11-22')).installed as string
  upstream.set('/tor/torbulkexitlist', { body: torList([EXIT]) })
  upstream.set('/disposable/index.json', { body: disposableLists([DOMAIN]).index })
  sets.b = (await run('2026-11-23')).installed as string
  labels.a = { tor: 'tor-exits@2026-11-22T06:00Z', disposable: 'disposable-email-domains@2026-11-22' }
  labels.b = { tor: 'tor-exits@2026-11-23T06:00Z', disposable: 'disposable-email-domains@2026-11-23' }
  switchPointer(dir, sets.a)
}, 60_000)

afterAll(async () => {
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A cache that never hits and answers after 0–2 ms: lookups interleave with the swaps at await points. */
function slowCache(): ResultCache {
  return {
    get: () => new Promise<CacheEntry | undefined>((r) => setTimeout(() => r(undefined), Math.floor(Math.random() * 3))),
    set: () => undefined,
  }
}

/** Which set an answer's data_sources name: 'a', 'b', or 'mixed'. */
function setOf(sources: string[], kinds: ('tor' | 'disposable')[]): 'a' | 'b' | 'mixed' {
  const inA = kinds.every((k) => sources.includes(labels.a[k])) && !kinds.some((k) => sources.includes(labels.b[k]))
  const inB = kinds.every((k) => sources.includes(labels.b[k])) && !kinds.some((k) => sources.includes(labels.a[k]))
  return inA ? 'a' : inB ? 'b' : 'mixed'
}

/** Rounds of 60 lookups, three swaps in each (30 reloads while lookups are in flight). */
const ROUNDS = 10

describe('a data set swap under load', () => {
  it('every answer comes entirely from the old or entirely from the new set; none fails', async () => {
    // metered: an offline instance without credits asks no cache (nothing to save), and the slow cache is the await point
    const rc = createRiskcheck({ offline: true, credits: 1_000_000, dataDir: dir, dataCheckIntervalMs: 0, cache: slowCache() })
    const seen = { a: 0, b: 0, mixed: 0, failed: 0, swaps: 0 }
    // parts other files of this worker loaded (the bundled data) are not this test's
    const loadedBefore = new Set(listSharedIpParts())
    let next: 'a' | 'b' = 'b'
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const calls: Promise<void>[] = []
        for (let i = 0; i < 60; i++) {
          if (i % 20 === 10) {
            switchPointer(dir, sets[next])
            next = next === 'a' ? 'b' : 'a'
            seen.swaps++
            void rc.reloadData()
          }
          const kind = i % 3
          if (kind === 0)
            calls.push(
              rc.ip(EXIT).then((r) => {
                const s = setOf(r.metadata.data_sources, ['tor'])
                if (s === 'mixed' || r.details.flags.is_tor !== (s === 'b')) seen.mixed++
                else seen[s]++
                if (r.risk.factors.includes('ip_source_unavailable') || r.details.location.city === null) seen.failed++
              }),
            )
          else if (kind === 1)
            calls.push(
              rc.email(`jane@${DOMAIN}`).then((r) => {
                const s = setOf(r.metadata.data_sources, ['disposable'])
                if (s === 'mixed' || r.details.is_disposable !== (s === 'b')) seen.mixed++
                else seen[s]++
              }),
            )
          else
            calls.push(
              rc.check({ email: `jane@${DOMAIN}`, ip: EXIT }).then((r) => {
                const s = setOf(r.metadata.data_sources, ['tor', 'disposable'])
                const d = r.details
                if (s === 'mixed' || d.ip?.flags.is_tor !== (s === 'b') || d.email?.is_disposable !== (s === 'b')) seen.mixed++
                else seen[s]++
                if (r.risk.factors.includes('ip_source_unavailable')) seen.failed++
              }),
            )
        }
        await Promise.all(calls)
      }
      await rc.reloadData()
      expect(seen.mixed).toBe(0)
      expect(seen.failed).toBe(0)
      expect(seen.a + seen.b).toBe(ROUNDS * 60)
      expect(seen.a).toBeGreaterThan(0)
      expect(seen.b).toBeGreaterThan(0)
      // the replaced sets were freed: one flags database is loaded, the current set's
      await rc.ip(EXIT)
      const current = rc.dataStatus().set
      const { readSetManifest } = await import('../src/data/store.js')
      const flags = readSetManifest(dir, current).built.find((b) => b.path === 'ip/flags.mmdb')
      expect(listSharedIpParts().filter((k) => k.startsWith('flags:') && !loadedBefore.has(k))).toEqual([`flags:sha256:${flags?.sha256}`])
    } finally {
      await rc.close()
    }
  }, 180_000)
})
