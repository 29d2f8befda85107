/**
 * The `riskcheck data` commands in-process: update from loopback upstreams, status with an injected clock (exit code
 * 0 fresh / 1 stale), RISKCHECK_DATA_DIR, usage errors, the source list, and lookups answering from --data-dir.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, type CliIO } from '../src/cli/main.js'
import { DATA_SOURCE_NAMES } from '../src/data/catalog.js'
import { startDataUpstream, type DataUpstream } from './fake-internet/data-upstream.js'

let upstream: DataUpstream
let dir: string
const NEW_EXIT = '81.2.69.160'

function io(env: Record<string, string | undefined> = {}) {
  const out: string[] = []
  const err: string[] = []
  const cli = { stdin: process.stdin, stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) }, env } as unknown as CliIO
  return { cli, out: () => out.join(''), err: () => err.join('') }
}

beforeAll(async () => {
  // the city database is built now: `data status` below reads the real clock, and a fixed build date would be past
  // the source's 45-day maximum age some weeks later (stale, exit 1)
  upstream = await startDataUpstream({ month: '2026-11', torExtra: [NEW_EXIT], cityBuilt: new Date() })
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-data-cli-'))
  const s = upstream.sources()
  const t = io()
  // every source from the loopback upstream (the tiny ASN table needs --force against the bundled 500k ranges)
  const code = await runCli(['data', 'update', '--data-dir', dir, '--force', ...Object.entries(s).flatMap(([k, v]) => ['--source', `${k}=${v}`])], t.cli)
  expect(code, t.err()).toBe(0)
  expect(t.out()).toMatch(/^installed data set \d{8}T\d{6}Z-[0-9a-f]{6} in /)
  expect(t.err()).toMatch(/riskcheck data: tor: 1,747 entries, version \d{4}-\d\d-\d\dT\d\d:\d\dZ/)
}, 60_000)
afterAll(async () => {
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('riskcheck data status', () => {
  it('exit 0 while every source is within its maximum age, 1 once one is stale (injected clock)', async () => {
    const t0 = io()
    const now = new Date(Date.now() + 3600_000).toISOString()
    expect(await runCli(['data', 'status', '--data-dir', dir, '--now', now, '--json'], t0.cli)).toBe(0)
    const fresh = JSON.parse(t0.out())
    expect(fresh).toMatchObject({ data_dir: dir, stale: false, stale_sources: [], problem: null })
    expect(fresh.sources.map((s: { name: string }) => s.name)).toEqual([...DATA_SOURCE_NAMES])
    const t1 = io()
    const tomorrow = new Date(Date.now() + 25 * 3600_000).toISOString()
    expect(await runCli(['data', 'status', '--data-dir', dir, '--now', tomorrow], t1.cli)).toBe(1)
    expect(t1.out()).toMatch(/^data set \S+ in .* \(created /)
    expect(t1.out()).toMatch(/\ntor +\S+ +\S+ +1d 1h +1d +STALE\n/)
    expect(t1.out()).toMatch(/\nvpn +\S+ +\S+ +1d 1h +14d +fresh\n/)
  })

  it('RISKCHECK_DATA_DIR names the directory', async () => {
    const t = io({ RISKCHECK_DATA_DIR: dir })
    expect(await runCli(['data', 'status', '--json'], t.cli)).toBe(0)
    expect(JSON.parse(t.out()).data_dir).toBe(dir)
  })

  it('without a data directory it reports the bundled data (stale today, fresh on its snapshot day)', async () => {
    const t = io()
    expect(await runCli(['data', 'status', '--now', '2026-11-23T00:00:00Z'], t.cli)).toBe(1)
    expect(t.out()).toMatch(/^the bundled data \(no data directory\)\n/)
    expect(t.out()).toMatch(/\ntor +2024-02-27 +2024-02-27 +999d 20h +1d +STALE\n/)
    // stale: it ends with the one command that fixes it
    expect(t.out()).toMatch(/\n\nFetch current data with: riskcheck data update --data-dir DIR \(then give that --data-dir, or RISKCHECK_DATA_DIR, to serve and the lookups\)\n$/)
    const fresh = io()
    expect(await runCli(['data', 'status', '--now', '2024-02-27T12:00:00Z'], fresh.cli)).toBe(0)
    expect(fresh.out()).not.toMatch(/Fetch current data/)
    // --now reads as every --now does: a date, or a date-time with Z or an offset (before: `new Date(text)` took `1`)
    for (const bad of ['1', 'Mar 3 2026', '2026-01-01T00:00:00']) {
      const b = io()
      expect(await runCli(['data', 'status', '--now', bad], b.cli), bad).toBe(64)
      expect(b.err()).toContain('--now must be an ISO 8601 date')
    }
    expect(await runCli(['data', 'status', '--now', '2024-02-27'], io().cli)).toBe(0)
  })
})

describe('lookups answer from --data-dir', () => {
  it('riskcheck ip --data-dir: the new exit is Tor, with versioned data_sources', async () => {
    const t = io()
    expect(await runCli(['ip', NEW_EXIT, '--offline', '--data-dir', dir, '--compact'], t.cli)).toBe(0)
    const r = JSON.parse(t.out())
    expect(r.details.flags.is_tor).toBe(true)
    expect(r.details.location.city).toBe('London')
    expect(r.metadata.data_sources).toEqual(expect.arrayContaining([expect.stringMatching(/^dbip-city-lite@2026-11$/), expect.stringMatching(/^tor-exits@\d{4}-\d\d-\d\dT\d\d:\d\dZ$/)]))
  })
})

describe('usage', () => {
  it.each([
    [['data', 'update'], /data update needs --data-dir DIR \(or RISKCHECK_DATA_DIR\)/],
    [['data', 'update', '--data-dir', '/tmp/x', '--only', 'tor,geo'], /--only: unknown source "geo"/],
    [['data', 'update', '--data-dir', '/tmp/x', '--source', 'tor'], /--source must be NAME=URL\|FILE/],
    [['data', 'update', '--data-dir', '/tmp/x', '--wait', 'soon'], /--wait must be a number of seconds/],
    [['data', 'status', '--now', 'yesterday'], /--now must be an ISO 8601 date/],
    [['data', 'frobnicate'], /unknown data command "frobnicate"/],
    [['data', 'status', '--bogus'], /Unknown option '--bogus'/],
  ])('%j → exit 64', async (argv, message) => {
    const t = io()
    expect(await runCli(argv, t.cli)).toBe(64)
    expect(t.err()).toMatch(message)
  })

  it('data sources lists every source with upstream, license, change rate and maximum age', async () => {
    const t = io()
    expect(await runCli(['data', 'sources', '--json'], t.cli)).toBe(0)
    const list = JSON.parse(t.out())
    expect(list.map((s: { name: string }) => s.name)).toEqual([...DATA_SOURCE_NAMES])
    expect(list.find((s: { name: string }) => s.name === 'tor')).toMatchObject({ data_sources_name: 'tor-exits', upstream: 'https://check.torproject.org/torbulkexitlist', max_age_seconds: 86_400 })
  })
})
