/**
 * The input hashes of answers on SQLite go into the group commit of their turn (src/server/store/sqlite/outcomes.ts):
 * the rows of one turn share the transaction of that turn's velocity hits and settlements, and a group that fails
 * before its writes ran (the file locked by another process) does not swallow the rows of later turns.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { createSqliteOutcomeStore } from '../src/server/store/sqlite/outcomes.js'
import { createSqliteVelocityStore } from '../src/server/store/sqlite/velocity.js'

const dir = mkdtempSync(join(tmpdir(), 'rc-inputs-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const T0 = Date.parse('2026-11-22T00:00:00Z')
const row = (i: number) => ({ orgId: 'org_1', mode: 'live' as const, requestId: `req_${i}`, at: T0, email: null, phone: null, ip: `h${i}` })

describe('answer input hashes on SQLite', () => {
  it("one turn's rows, velocity hits and settlements commit together; a failed group leaves later rows unharmed", async () => {
    const file = join(dir, 'inputs.sqlite')
    // count the transactions begun (not the savepoints inside one), through every transaction function the store
    // makes (the group commit makes its own once, when the store opens): after setup, only the group commit begins
    // one (one per flush)
    let begun = 0
    const make = Database.prototype.transaction
    Database.prototype.transaction = function counted(this: Database.Database, fn: (...args: never[]) => unknown) {
      const t = make.call(this, fn)
      const count = <F extends (...args: never[]) => unknown>(f: F) => ((...args: Parameters<F>) => (this.inTransaction || begun++, f(...args))) as F
      return Object.assign(count(t), { default: count(t.default), deferred: count(t.deferred), immediate: count(t.immediate), exclusive: count(t.exclusive) })
    } as typeof make
    let store: ReturnType<typeof createSqliteStore>
    try {
      store = createSqliteStore(file, { busyTimeoutMs: 0 })
    } finally {
      Database.prototype.transaction = make
    }
    const org = store.createOrg({ name: 'Inputs', planId: 'starter' }, T0)
    const outcomes = createSqliteOutcomeStore(store.db, (w) => store.groupWrite(w))
    const velocity = createSqliteVelocityStore(store.db, (w) => store.groupWrite(w))
    const other = new Database(file)
    begun = 0
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        Promise.all([velocity.hit([`k${i % 3}`], T0 + i), outcomes.recordInputs([row(i)]), store.grouped!.settleCredits(org.id, 1, T0 + i)]),
      ),
    )
    expect(begun).toBe(1)
    expect(outcomes.inputsOf('org_1', 'live', Array.from({ length: 20 }, (_, i) => `req_${i}`)).size).toBe(20)
    expect(store.getOrg(org.id, T0)!.usage.totalLookups).toBe(20)

    // another process holds the write lock: the group of this turn fails, rows and all
    other.prepare('BEGIN IMMEDIATE').run()
    await expect(Promise.resolve(outcomes.recordInputs([row(20)]))).rejects.toThrow(/locked|busy/i)
    other.prepare('ROLLBACK').run()
    // the next turn's rows are written
    await outcomes.recordInputs([row(21)])
    const kept = outcomes.inputsOf('org_1', 'live', ['req_20', 'req_21'])
    expect([...kept.keys()]).toEqual(['req_21'])
    other.close()
    store.close()
  })
})
