/**
 * The SQLite velocity store alone (what a server on SQLite counts with): hits of two keys (an IP and its network, as
 * `POST /v1/ip` makes), 16 callers at once through the store's group commit, on a migrated file; new keys every hit
 * (a sign-up stream) and the same 50 keys again and again. Prints CPU µs per hit.
 *
 *   npx tsx scripts/bench/velocity-sqlite.ts [--hits N]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { groupCommit } from '../../src/server/store/sqlite/group-commit.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { createSqliteVelocityStore } from '../../src/server/store/sqlite/velocity.js'
import { xorshift } from '../../test/xorshift.js'

const i = process.argv.indexOf('--hits')
const HITS = i >= 0 ? Number(process.argv[i + 1]) : 40_000
const CALLERS = 16

async function run(fresh: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'rc-vel-sqlite-'))
  const store = createSqliteStore(join(dir, 'v.sqlite'))
  try {
    const velocity = createSqliteVelocityStore(store.db, groupCommit(store.db))
    const next = xorshift(fresh ? 7 : 8)
    const key = () => (fresh ? `k${next().toString(36)}${next().toString(36)}` : `k${next() % 50}`)
    for (let w = 0; w < 2000; w++) await velocity.hit([`${key()}i`, `${key()}n`], Date.now(), undefined)
    let n = 0
    const caller = async () => {
      while (n++ < HITS) {
        const k = key()
        await velocity.hit([`${k}i`, `${k}n`], Date.now(), undefined)
      }
    }
    const c0 = process.cpuUsage()
    await Promise.all(Array.from({ length: CALLERS }, caller))
    const c = process.cpuUsage(c0)
    return (c.user + c.system) / HITS
  } finally {
    store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

console.log(`SQLite velocity store: ${HITS.toLocaleString('en-US')} hits of two keys, ${CALLERS} callers at once, group commit`)
console.log(`new keys every hit   ${(await run(true)).toFixed(1).padStart(6)} µs CPU per hit`)
console.log(`the same 50 keys     ${(await run(false)).toFixed(1).padStart(6)} µs CPU per hit`)
