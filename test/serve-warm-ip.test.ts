/**
 * `riskcheck serve` loads the IP data before it listens: the first IP lookup of a fresh server would otherwise load
 * it while every request of the instance waits (the event loop is blocked for the load).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { clearSharedIpData, listSharedIpParts } from '../src/sources/ip/ip-data.js'
import { serveInProcess } from './server-helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'rc-serve-warm-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

it('the IP data is loaded when serve listens, before any lookup', { timeout: 60_000 }, async () => {
  clearSharedIpData()
  expect(listSharedIpParts()).toEqual([])
  const s = await serveInProcess(['--port', '0', '--db', join(dir, 'warm.sqlite'), '--offline'])
  try {
    const parts = listSharedIpParts().map((k) => k.split(':')[0])
    expect(parts).toEqual(expect.arrayContaining(['city', 'asn4', 'asn6', 'flags', 'asnflags']))
  } finally {
    s.stop()
    await s.exit
  }
})
