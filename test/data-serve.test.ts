/**
 * `riskcheck serve --data-dir DIR --refresh-data EVERY`: the server warns at start that its data is stale, runs the
 * update itself (at once, since the data is stale), and answers from the new set without a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAdmin } from '../src/cli/admin-command.js'
import { runServe } from '../src/cli/serve-command.js'
import { readPointer } from '../src/data/store.js'
import { startDataUpstream, type DataUpstream } from './fake-internet/data-upstream.js'
import { memoryIO } from './helpers.js'

const NEW_EXIT = '81.2.69.160'
let tmp: string
let upstream: DataUpstream


beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'riskcheck-serve-data-'))
  upstream = await startDataUpstream({ month: '2026-11', torExtra: [NEW_EXIT] })
})
afterAll(async () => {
  await upstream.close()
  rmSync(tmp, { recursive: true, force: true })
})

describe('riskcheck serve with scheduled data updates', () => {
  it('warns about stale data at start, updates at once, and answers from the new set without a restart', async () => {
    const db = join(tmp, 'serve.sqlite')
    const dataDir = join(tmp, 'data')
    const a = memoryIO()
    await runAdmin(['org', 'create', '--name', 'Acme', '--plan', 'scale', '--db', db, '--json'], a)
    const org = JSON.parse(a.out()).id as string
    const k = memoryIO()
    await runAdmin(['key', 'create', '--org', org, '--db', db, '--json'], k)
    const key = JSON.parse(k.out()).secret as string

    const io = memoryIO({ RISKCHECK_DATA_DIR: dataDir })
    const stop = new AbortController()
    let url = ''
    const sources = Object.entries(upstream.sources()).flatMap(([n, loc]) => ['--data-source', `${n}=${loc}`])
    const exit = runServe(['--port', '0', '--db', db, '--offline', '--json', '--log-level', 'info', '--refresh-data', '6h', ...sources], io, {
      signal: stop.signal,
      onListening: (u) => (url = u),
    })
    try {
      for (let i = 0; i < 500 && url === ''; i++) await new Promise((r) => setTimeout(r, 10))
      expect(url).not.toBe('')
      const ask = async () =>
        (await (
          await fetch(`${url}/v1/ip`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ip: NEW_EXIT }) })
        ).json()) as { data: { details: { flags: { is_tor: boolean } }; metadata: { data_sources: string[] } } }
      let r = await ask()
      for (let i = 0; i < 300 && !r.data.details.flags.is_tor; i++) {
        await new Promise((res) => setTimeout(res, 50))
        r = await ask()
      }
      expect(r.data.details.flags.is_tor).toBe(true)
      expect(r.data.metadata.data_sources).toContain('dbip-city-lite@2026-11')
      expect(readPointer(dataDir)).not.toBeNull()
      const log = io.err()
      // said once at start, as a notice (level 30 = info) naming the command, not as a warning
      expect(log.match(/"data_status":"stale"/g)).toHaveLength(1)
      expect(log).toMatch(/"level":30,[^\n]*"data_status":"stale".*"msg":"open data: the bundled snapshot answers \(tor from 2024-02-27 \(max 1d\), [^\n]*Fetch current data with: riskcheck data update --data-dir [^\n]+"/)
      expect(log).toMatch(/data update: installed data set \d{8}T\d{6}Z-[0-9a-f]{6}/)
      // the tiny ASN table of the fake upstream is refused (it shrank far below the bundled one): logged, not fatal
      expect(log).toMatch(/data update: asn refused: refused: 2 entries, less than half/)
    } finally {
      stop.abort()
      expect(await exit).toBe(0)
    }
  }, 60_000)

  it.each([
    [['--refresh-data', '6h'], /--refresh-data needs --data-dir DIR/],
    [['--refresh-data', '10s', '--data-dir', '/tmp/x'], /--refresh-data must be a duration of at least 1m/],
    [['--data-source', 'geo=http://x'], /--data-source must be NAME=URL\|FILE/],
  ])('%j → exit 64', async (args, message) => {
    const io = memoryIO()
    expect(await runServe(args, io)).toBe(64)
    expect(io.err()).toMatch(message)
  })
})
