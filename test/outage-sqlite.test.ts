/**
 * A SQLite database that cannot be written, under a serving server: locked by another connection past the busy
 * timeout (SQLITE_BUSY), read-only (SQLITE_READONLY) and on a full disk (SQLITE_FULL: a tiny tmpfs filled up). Each
 * request that must write gets 503 UPSTREAM_UNAVAILABLE with Retry-After (never 500), nothing is half-written (the
 * balance and the usage are what they were), GET /readyz says not ready, the log says so once; once the database can
 * be written again, the server answers and says so once. The full disk needs root (to mount a tmpfs); without it that
 * case is skipped with a note. (A file that is read-only when the server starts makes the start fail with that message.)
 */
import Database from 'better-sqlite3'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer } from '../src/server/app.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c()
})

/** A server in this process on the SQLite file at `path` (busy timeout 100 ms), an org with a live key; log kept. */
async function startServer(path: string) {
  const store = createSqliteStore(path, { busyTimeoutMs: 100 })
  const log: string[] = []
  const app = createServer({ db: store, riskcheck: { offline: true }, purgeIntervalMs: 0, webhookIntervalMs: 0, logger: { level: 'warn', stream: { write: (l: string) => void log.push(l) } } })
  await app.ready()
  const now = Date.now()
  const org = store.createOrg({ name: 'Disk', planId: 'starter' }, now)
  const { secret } = await issueApiKey(store, { orgId: org.id, name: 'disk' }, now)
  let n = 0
  const lookup = async () => {
    n++
    const r = await app.inject({
      method: 'POST',
      url: '/v1/ip',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', 'idempotency-key': `k-${n}` },
      payload: JSON.stringify({ ip: `11.0.${(n >> 8) & 255}.${n & 255}` }),
    })
    return { status: r.statusCode, retryAfter: r.headers['retry-after'], body: r.json() as { error?: { code: string } } }
  }
  const readyz = async () => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode
  /** Balance and lookups counted, read by a connection of its own. */
  const ledger = () => {
    const db = new Database(path, { readonly: true })
    try {
      return db.prepare('SELECT subscription_credits + purchased_credits AS balance, total_lookups AS lookups, total_credits AS credits FROM orgs WHERE id = ?').get(org.id)
    } finally {
      db.close()
    }
  }
  cleanups.push(() => void app.close())
  return { app, log, lookup, readyz, ledger }
}

/** The common part: the outage answered 503 with nothing written, then recovery, one log line each way. */
async function outage(server: Awaited<ReturnType<typeof startServer>>, start: () => void, end: () => void): Promise<void> {
  expect((await server.lookup()).status).toBe(200)
  const before = server.ledger()
  start()
  for (let i = 0; i < 5; i++) {
    const a = await server.lookup()
    expect(a.status).toBe(503)
    expect(a.body.error?.code).toBe('UPSTREAM_UNAVAILABLE')
    expect(a.retryAfter).toMatch(/^[1-9][0-9]*$/)
  }
  expect(await server.readyz()).toBe(503)
  expect(server.ledger()).toEqual(before)
  end()
  let tries = 0
  while ((await server.readyz()) !== 200) if (++tries > 50) throw new Error('never ready again')
  const after = await server.lookup()
  expect(after.status).toBe(200)
  expect(server.log.filter((l) => l.includes('is unreachable'))).toHaveLength(1)
  expect(server.log.filter((l) => l.includes('answers again after'))).toHaveLength(1)
  expect(server.log.filter((l) => l.includes('internal error'))).toHaveLength(0)
}

describe('a SQLite database that cannot be written', () => {
  it('locked by another connection past the busy timeout (SQLITE_BUSY): 503, nothing written, then answers again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-busy-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'busy.sqlite')
    const server = await startServer(path)
    const other = new Database(path)
    cleanups.push(() => other.close())
    await outage(
      server,
      () => other.exec('BEGIN IMMEDIATE'),
      () => other.exec('ROLLBACK'),
    )
  })

  it('read-only (SQLITE_READONLY, here by PRAGMA query_only on its connection): 503, nothing written, then answers again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-ro-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const server = await startServer(join(dir, 'ro.sqlite'))
    const db = (server.app.store as unknown as { db: Database.Database }).db
    await outage(
      server,
      () => db.pragma('query_only = ON'),
      () => db.pragma('query_only = OFF'),
    )
  })
})

// A tmpfs of its own (root only), filled up.
const mountable = (() => {
  if (process.getuid?.() !== 0) return false
  const dir = mkdtempSync(join(tmpdir(), 'rc-mount-'))
  const ok = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]).status === 0
  if (ok) spawnSync('umount', [dir])
  rmSync(dir, { recursive: true, force: true })
  return ok
})()
if (!mountable) console.log('[skipped] test/outage-sqlite.test.ts disk full: needs root to mount a tmpfs. To run it: as root, npx vitest run test/outage-sqlite.test.ts')

describe.skipIf(!mountable)('a SQLite database on a tiny tmpfs', () => {
  const mounted = () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-tmpfs-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir])
    cleanups.push(() => {
      spawnSync('umount', ['-l', dir])
      rmSync(dir, { recursive: true, force: true })
    })
    return dir
  }

  it('on a full disk (SQLITE_FULL): 503, nothing half-written, then answers again once there is room', async () => {
    const dir = mounted()
    const server = await startServer(join(dir, 'full.sqlite'))
    const filler = join(dir, 'filler')
    await outage(
      server,
      () => {
        // every byte left, taken
        for (let size = 4 << 20; size >= 512; size >>= 1) {
          for (let i = 0; ; i++) {
            try {
              writeFileSync(`${filler}-${size}-${i}`, Buffer.alloc(size))
            } catch {
              break
            }
          }
        }
      },
      () => {
        for (const f of readdirSync(dir)) if (f.startsWith('filler')) unlinkSync(join(dir, f))
      },
    )
  })
})
