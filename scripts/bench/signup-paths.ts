/**
 * Benchmark of the two paths of a dashboard sign-up after the password hash (docs/dashboard.md: sign-up answers
 * the same whether or not the address has an account): what each does before its answer, on a SQLite file database
 * (WAL) shared by the service store and the team store, as `riskcheck serve --db` runs them.
 *
 *   npx tsx scripts/bench/signup-paths.ts [--runs 300]
 *
 * - New address: the taken-address check, the team (a service org), the person with their owner membership in one
 *   team-store transaction, and the mail throttle's count of the verification mail (the mail itself goes after the
 *   answer).
 * - Taken address: the same check, and the throttle's count of the note to the owner.
 * The hash (~100 ms to ~1 s, the same on both paths) is left out: the difference between the paths is what timing
 * could tell. Times are wall-clock on a shared machine (median and 90th percentile).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { createOutbox, type MailOutcome } from '../../src/dashboard/outbox.js'
import { createSqliteTeamStore } from '../../src/server/store/sqlite/dashboard.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'

const { values } = parseArgs({ options: { runs: { type: 'string' } } })
const RUNS = Number(values.runs ?? 300)

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bench-signup-'))
  const store = createSqliteStore(join(dir, 'db.sqlite'))
  const teams = createSqliteTeamStore(store.db)
  let t = Date.parse('2026-11-27T00:00:00Z')
  const nowMs = () => t
  const outbox = createOutbox({ teams, mailer: { configured: true, send: async () => undefined, close: () => undefined }, nowMs, base: () => 'https://rc.example.test' })
  const taken = 'taken@example.test'
  teams.createUser({ id: 'usr_taken', email: taken, passwordHash: 'h' }, t)
  const fresh: number[] = []
  const again: number[] = []
  const pending: Array<Promise<MailOutcome>> = []
  for (let i = 0; i < RUNS; i++) {
    // a new address
    t += 3_600_000
    const email = `new${i}@example.test`
    let t0 = performance.now()
    if (!teams.getUserByEmail(email)) {
      const org = store.createOrg({ name: `Team ${i}`, planId: 'free' }, t)
      const user = teams.createAccount({ id: `usr_${i}`, email, passwordHash: 'h' }, { orgId: org.id, role: 'owner' }, t) as { id: string }
      pending.push(outbox.send({ kind: 'verify', to: email, account: user.id }, () => ({ subject: 's', text: 't' })))
    }
    fresh.push(performance.now() - t0)
    // a taken one
    t0 = performance.now()
    if (teams.getUserByEmail(taken)) pending.push(outbox.send({ kind: 'signup', to: taken }, () => ({ subject: 's', text: 't' })))
    again.push(performance.now() - t0)
    await Promise.all(pending.splice(0))
  }
  const row = (name: string, xs: number[]) => `${name.padEnd(15)} median ${quantile(xs, 0.5).toFixed(3)} ms   p90 ${quantile(xs, 0.9).toFixed(3)} ms`
  console.log(`sign-up after the hash, ${RUNS} runs each (SQLite file, WAL):`)
  console.log(row('new address', fresh))
  console.log(row('taken address', again))
  store.close()
  rmSync(dir, { recursive: true, force: true })
}

void main()
