/**
 * `riskcheck data update` with nothing reachable — every upstream on a loopback port nothing listens on, or on a host
 * name that does not resolve — fails fast: one try per unreachable host (no retries, no waits), each source's failure
 * printed once, exit 69, and no `staging/` left behind.
 */
import dns from 'node:dns'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { DATA_SOURCE_NAMES } from '../src/data/catalog.js'
import { updateData } from '../src/data/update.js'
import type { CliIO } from '../src/cli/shared.js'

let closedPort: number
const dirs: string[] = []
const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'riskcheck-offline-'))
  dirs.push(d)
  return d
}

beforeAll(async () => {
  const probe = createServer()
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()))
  closedPort = (probe.address() as AddressInfo).port
  await new Promise<void>((r) => probe.close(() => r()))
})
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** `--source NAME=…` for every source, all on `base` (a mirror in each upstream's layout). */
const everySourceAt = (base: string) => Object.fromEntries(DATA_SOURCE_NAMES.map((n) => [n, `${base}/${n}/`]))

/** The data directory holds nothing an update left behind (no `staging/`, no lock). */
function expectNothingLeft(dir: string): void {
  expect(existsSync(join(dir, 'staging'))).toBe(false)
  expect(existsSync(join(dir, 'update.lock'))).toBe(false)
  expect(readdirSync(dir)).toEqual([])
}

/** Counts the fetches and waits of an update. */
function counters() {
  const c = { fetches: 0, sleeps: 0 }
  return {
    c,
    fetch: ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      c.fetches++
      return fetch(input, init)
    }) as typeof fetch,
    sleep: async () => {
      c.sleeps++
    },
  }
}

describe('data update with nothing reachable', () => {
  it('a refusing upstream: each source fails once with the reason, the host is tried at most once per worker, no waits', async () => {
    const dir = newDir()
    const k = counters()
    const r = await updateData({ dataDir: dir, sources: everySourceAt(`http://127.0.0.1:${closedPort}`), fetch: k.fetch, sleep: k.sleep })
    expect(r).toMatchObject({ ok: false, installed: null, updated: [] })
    expect(r.failed.map((f) => f.name)).toEqual([...DATA_SOURCE_NAMES])
    for (const f of r.failed) {
      expect(f.unreachable, f.name).toBe(true)
      expect(f.reason, f.name).toContain(`connection to 127.0.0.1:${closedPort} refused (ECONNREFUSED)`)
    }
    // Two sources are fetched at a time; once the host refused, no other source asks it again, and nothing is retried.
    expect(k.c.fetches).toBeLessThanOrEqual(2)
    expect(k.c.sleeps).toBe(0)
    expectNothingLeft(dir)
  })

  it('an unresolvable host: the DNS failure is the reason, looked up at most once per worker', async () => {
    const dir = newDir()
    const k = counters()
    const lookups: string[] = []
    const original = dns.lookup
    ;(dns as { lookup: unknown }).lookup = (hostname: string, options: unknown, callback?: unknown) => {
      lookups.push(hostname)
      const cb = (typeof options === 'function' ? options : callback) as (err: NodeJS.ErrnoException) => void
      setImmediate(() => cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', syscall: 'getaddrinfo', hostname })))
    }
    try {
      const r = await updateData({ dataDir: dir, sources: everySourceAt(`http://localhost:${closedPort}`), fetch: k.fetch, sleep: k.sleep })
      expect(r.installed).toBeNull()
      for (const f of r.failed) expect(f).toMatchObject({ unreachable: true, reason: expect.stringContaining('DNS lookup of localhost failed (ENOTFOUND)') })
      expect(r.failed).toHaveLength(DATA_SOURCE_NAMES.length)
    } finally {
      ;(dns as { lookup: unknown }).lookup = original
    }
    expect(lookups.length).toBeGreaterThan(0)
    expect(lookups.length).toBeLessThanOrEqual(2)
    expect(k.c.sleeps).toBe(0)
    expectNothingLeft(dir)
  })

  it('the CLI prints each failure once, then one line saying nothing was reachable, and exits 69', async () => {
    const dir = newDir()
    const out: string[] = []
    const err: string[] = []
    const io = { stdin: process.stdin, stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) }, env: {} } as unknown as CliIO
    const sources = Object.entries(everySourceAt(`http://127.0.0.1:${closedPort}`)).flatMap(([n, u]) => ['--source', `${n}=${u}`])
    expect(await runCli(['data', 'update', '--data-dir', dir, ...sources], io)).toBe(69)
    const lines = err.join('').trimEnd().split('\n')
    for (const name of DATA_SOURCE_NAMES) {
      const failures = lines.filter((l) => l.includes(`${name}:`) && l.includes('refused (ECONNREFUSED)'))
      expect(failures, name).toEqual([expect.stringMatching(new RegExp(`^riskcheck data: ${name}: FAILED: `))])
    }
    expect(lines.at(-1)).toMatch(/^riskcheck data update: no upstream could be reached/)
    expect(out.join('')).toMatch(/^nothing installed/)
    expectNothingLeft(dir)
  })

  it('a source that fails a check still exits 1 and names it once (not every failure is "unreachable")', async () => {
    const dir = newDir()
    const out: string[] = []
    const err: string[] = []
    const io = { stdin: process.stdin, stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) }, env: {} } as unknown as CliIO
    const code = await runCli(['data', 'update', '--data-dir', dir, '--only', 'tor', '--source', `tor=${join(dir, 'missing.txt')}`], io)
    expect(code).toBe(1)
    expect(err.join('').match(/tor: REFUSED: /g)).toHaveLength(1)
    expect(err.join('')).toMatch(/riskcheck data update: 1 of 1 sources failed: tor\n$/)
  })
})
