import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RiskcheckWarning } from '../options.js'
import { createDataProvider } from './provider.js'
import { switchPointer } from './store.js'
import { updateData } from './update.js'

const TOR = join(__dirname, '..', '..', 'data', 'ip', 'lists', 'secops-tor-ip-addresses', 'tor-exit-nodes.lst')
const dirs: string[] = []
const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'riskcheck-provider-'))
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A data directory with two installed sets (tor refreshed twice from the bundled snapshot). */
async function twoSets(): Promise<{ dir: string; older: string; newer: string }> {
  const dir = newDir()
  const at = (m: number) => () => new Date(Date.UTC(2026, 10, 23, 6, m))
  const older = (await updateData({ dataDir: dir, only: ['tor'], sources: { tor: TOR }, now: at(0) })).installed as string
  const newer = (await updateData({ dataDir: dir, only: ['tor'], sources: { tor: TOR }, now: at(1) })).installed as string
  return { dir, older, newer }
}

describe('the data provider', () => {
  let sets: { dir: string; older: string; newer: string }
  beforeAll(async () => {
    sets = await twoSets()
  }, 60_000)

  it('a directory without an installed set: the bundled data answers, with a warning', () => {
    const dir = newDir()
    const warnings: RiskcheckWarning[] = []
    const p = createDataProvider({ dataDir: dir, checkIntervalMs: 0, warn: (w) => warnings.push(w) })
    expect(p.current().id).toBe('bundled')
    expect(warnings).toEqual([{ code: 'data_set_missing', message: expect.stringContaining('has no installed data set yet') }])
    expect(p.status(new Date()).data_dir).toBe(dir)
    p.close()
  })

  it('uses the set the pointer names and reports its versions', () => {
    const p = createDataProvider({ dataDir: sets.dir, checkIntervalMs: 0 })
    expect(p.current().id).toBe(sets.newer)
    expect(p.current().labels.tor).toBe('tor-exits@2026-11-23T06:01Z')
    p.close()
  })

  it('a damaged set in force: the newest older set that loads answers, with a warning', () => {
    const { dir, older, newer } = sets
    const victim = join(dir, 'sets', newer, 'lists', 'torproject', 'torbulkexitlist')
    const keep = readFileSync(victim)
    unlinkSync(victim)
    try {
      const warnings: RiskcheckWarning[] = []
      const p = createDataProvider({ dataDir: dir, checkIntervalMs: 0, warn: (w) => warnings.push(w) })
      expect(p.current().id).toBe(older)
      expect(warnings.map((w) => w.code)).toEqual(['data_set_unusable', 'data_set_unusable'])
      expect(warnings[0]?.message).toMatch(/could not be loaded: data set .* is damaged: lists\/torproject\/torbulkexitlist is missing/)
      expect(p.status(new Date()).problem).toMatch(/the older set .* answers/)
      p.close()
    } finally {
      writeFileSync(victim, keep)
    }
  })

  it('a refresh to a set that cannot be loaded keeps the set in use', async () => {
    const { dir, older, newer } = sets
    switchPointer(dir, older)
    const warnings: RiskcheckWarning[] = []
    const p = createDataProvider({ dataDir: dir, checkIntervalMs: 0, warn: (w) => warnings.push(w) })
    expect(p.current().id).toBe(older)
    p.current().ip.flags() // loaded parts are loaded again before a swap
    const victim = join(dir, 'sets', newer, 'ip', 'flags.mmdb')
    const keep = readFileSync(victim)
    writeFileSync(victim, Buffer.alloc(keep.length, 0)) // same size, garbage
    switchPointer(dir, newer)
    try {
      const r = await p.refresh()
      expect(r).toMatchObject({ changed: false, set: older, error: expect.stringContaining(`data set ${newer}`) })
      expect(p.current().id).toBe(older)
      expect(warnings.at(-1)?.code).toBe('data_set_unusable')
      writeFileSync(victim, keep)
      expect(await p.refresh()).toEqual({ changed: true, set: newer })
      expect(p.status(new Date()).problem).toBeNull()
    } finally {
      writeFileSync(victim, keep)
      p.close()
    }
  })

  it('a pointer that names no set: warning, and the newest set answers', () => {
    const { dir, newer } = sets
    writeFileSync(join(dir, 'current'), '../../etc\n')
    const warnings: RiskcheckWarning[] = []
    const p = createDataProvider({ dataDir: dir, checkIntervalMs: 0, warn: (w) => warnings.push(w) })
    expect(p.current().id).toBe(newer)
    expect(warnings[0]?.message).toMatch(/does not name a data set/)
    p.close()
    switchPointer(dir, newer)
  })

  it('run() pins the set for a whole call, across awaits', async () => {
    const { dir, older, newer } = sets
    switchPointer(dir, older)
    const p = createDataProvider({ dataDir: dir, checkIntervalMs: 0 })
    const seen: string[] = []
    const call = p.run(async () => {
      seen.push(p.current().id)
      await new Promise((r) => setTimeout(r, 20))
      seen.push(p.current().id)
    })
    switchPointer(dir, newer)
    await p.refresh()
    await call
    expect(seen).toEqual([older, older])
    expect(p.current().id).toBe(newer)
    p.close()
  })
})
