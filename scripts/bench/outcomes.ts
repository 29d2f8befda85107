/**
 * Benchmark of outcomes (docs/outcomes.md): what they add to every answer, and recording a full call.
 *
 *   npx tsx scripts/bench/outcomes.ts [--answers 100000]
 *
 * - Per answer: the request's labels hook made (`prepare` with the outcome version the auth read returns: the
 *   org's labels kept in memory at that version) and run on an IP answer (its value hashed, kept for the request id,
 *   looked up in the org's labels), for an org without outcomes and for one with 1,000 (no database read on this path).
 * - POST /v1/outcomes' work for 1,000 labels by input (one transaction), on an SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { createOutcomeService } from '../../src/server/outcomes.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { createSqliteOutcomeStore } from '../../src/server/store/sqlite/outcomes.js'

const { values } = parseArgs({ options: { answers: { type: 'string' } } })
const ANSWERS = Number(values.answers ?? 100_000)

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bench-outcomes-'))
  const store = createSqliteStore(join(dir, 'bench.sqlite'))
  try {
    const outcomes = createSqliteOutcomeStore(store.db)
    const svc = createOutcomeService({ store: outcomes, nowMs: Date.now, retentionDays: 180, warn: () => undefined })
    const owner = { orgId: 'org_bench', mode: 'live' as const }
    for (const label of ['org without outcomes', 'org with 1,000 outcomes']) {
      if (label !== 'org without outcomes') {
        const items = Array.from({ length: 1000 }, (_, i) => ({ input: `10.0.${i >> 8}.${i & 255}`, type: 'ip' as const, outcome: 'fraud' as const }))
        const t0 = performance.now()
        await svc.record(owner, items)
        console.log(`record 1,000 outcomes by input (one call, SQLite file): ${(performance.now() - t0).toFixed(0)} ms`)
      }
      const version = outcomes.version(owner.orgId, owner.mode) // what the auth read returns with the key
      const t0 = performance.now()
      for (let i = 0; i < ANSWERS; i++) (await svc.prepare(owner, version)).hook('ip', { ip: `192.0.2.${i & 255}` })
      console.log(`${label}: ${(((performance.now() - t0) * 1000) / ANSWERS).toFixed(1)} µs per answer (${ANSWERS} IP answers)`)
    }
  } finally {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

void main()
