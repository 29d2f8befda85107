/**
 * Benchmark of per-org policies (docs/service.md, "Scoring policy"): what they add to a request, and how
 * long `riskcheck admin policy set` takes over a full answer log.
 *
 *   npx tsx scripts/bench/org-policy.ts [--answers 100000]
 *
 * - Per request: resolving the org's policy when the auth read brought its version (a Map look-up of the compiled
 *   policy) and logging the answer (SQLite file database, WAL; the answers finished in one event-loop turn are
 *   written in one transaction) — the two things a live lookup now does besides its lookup — with 1, 4 and 16
 *   requests finishing per turn, against one INSERT per answer.
 * - `policy set`: the org's answers of the last 7 days read from the log (`--answers`, default the per-org cap of
 *   100,000, real offline answers of a few inputs) and backtested under a candidate policy (the JSON report built).
 * - The purge of the log (run every 10 minutes with the cache's): time to delete a day's expired answers.
 * Times are wall-clock on a shared machine; CPU time is printed beside them.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os, { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { createRiskcheck } from '../../src/riskcheck.js'
import { createBacktest, parsePolicy } from '../../src/scoring/index.js'
import { createOrgPolicies, loggedAnswerOf } from '../../src/server/org-policies.js'
import { ANSWER_LOG_TTL_MS, createSqliteOrgPolicyStore, type LoggedAnswer } from '../../src/server/store/sqlite/org-policies.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'

const { values } = parseArgs({ options: { answers: { type: 'string' } } })
const ANSWERS = Number(values.answers ?? 100_000)

function timed<T>(fn: () => T): { result: T; ms: number; cpuMs: number } {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  const result = fn()
  const ms = performance.now() - t0
  const c = process.cpuUsage(c0)
  return { result, ms, cpuMs: (c.user + c.system) / 1000 }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bench-org-policy-'))
  const store = createSqliteStore(join(dir, 'bench.sqlite'))
  const rc = createRiskcheck({ offline: true })
  try {
    const now = Date.now()
    const org = store.createOrg({ name: 'Bench', planId: 'scale' }, now)
    const log = createSqliteOrgPolicyStore(store.db)
    const candidate = await parsePolicy('rules: [unusable_input_blocks, { name: datacenter_blocks, when: { any: [ip_datacenter] }, action: block }]', { format: 'yaml' })
    log.setOrgPolicy({ orgId: org.id, version: candidate.version, canonical: candidate.canonical, description: null, source: null, setAt: now })
    const policies = createOrgPolicies({ store: log, service: rc.policy, nowMs: () => now, warn: () => undefined })

    // Real answers of a few inputs (the log holds what each answer recorded).
    const inputs = ['8.8.8.8', '1.1.1.1', '10.0.0.1', '185.220.101.1', '9.9.9.9', '203.0.113.9', '2001:4860:4860::8888']
    const samples: LoggedAnswer[] = []
    for (const ip of inputs) samples.push(loggedAnswerOf(await rc.ip(ip), now)!)
    const email = await rc.email('jane@mailinator.com', { smtp: false })
    samples.push(loggedAnswerOf(email, now)!)

    console.log(`riskcheck per-org policy benchmark — Node ${process.version}, load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs\n`)

    // Per request: resolve (version known from the auth read, policy compiled) + log the answer, `k` requests
    // finishing per event-loop turn; and, for comparison, one INSERT (one transaction) per answer.
    const results = [await rc.ip('8.8.8.8'), await rc.ip('1.1.1.1'), await rc.ip('185.220.101.1')]
    await policies.resolve(org.id, candidate.version)
    const N = 16_000
    const perRequest = async (label: string, k: number, one: (i: number) => Promise<void> | void) => {
      const c0 = process.cpuUsage()
      const t0 = performance.now()
      for (let i = 0; i < N; i += k) {
        for (let j = i; j < i + k; j++) await one(j)
        await new Promise((r) => setImmediate(r))
      }
      await policies.flush()
      const us = ((performance.now() - t0) / N) * 1000
      const c = process.cpuUsage(c0)
      console.log(`per request, ${label}: ${us.toFixed(1)} µs (${((c.user + c.system) / N).toFixed(1)} µs CPU)`)
    }
    const logged = (i: number) => ({ ...samples[i % samples.length]!, at: now - ANSWER_LOG_TTL_MS + 1 + i })
    await perRequest('resolve + one INSERT per answer (no batching)', 1, async (i) => {
      await policies.resolve(org.id, candidate.version)
      log.appendAnswers(org.id, [logged(i)])
    })
    for (const k of [1, 4, 16])
      await perRequest(`resolve + record, ${k} per event-loop turn`, k, async (i) => {
        await policies.resolve(org.id, candidate.version)
        policies.record(org.id, results[i % results.length]!)
      })
    log.purgeAnswers(now + ANSWER_LOG_TTL_MS + 1) // start the log afresh
    for (let i = 0; i < N; i += 1000) log.appendAnswers(org.id, Array.from({ length: 1000 }, (_, j) => logged(i + j)))

    // Fill the log up to ANSWERS (one transaction per 1,000, as the server's many small appends would land).
    const rest = ANSWERS - N
    for (let i = 0; i < rest; i += 1000) {
      const batch: LoggedAnswer[] = []
      for (let j = i; j < Math.min(rest, i + 1000); j++) batch.push({ ...samples[j % samples.length]!, at: now - 1000 + (j % 1000) })
      log.appendAnswers(org.id, batch)
    }

    const read = timed(() => log.listAnswers(org.id, now - ANSWER_LOG_TTL_MS))
    const bt = timed(() => {
      const run = createBacktest(candidate.policy, { maxChanges: 20 })
      for (const a of read.result) run.add(a)
      return run.report()
    })
    console.log(
      `admin policy set over ${read.result.length.toLocaleString('en-US')} logged answers: read ${read.ms.toFixed(0)} ms (${read.cpuMs.toFixed(0)} ms CPU) + backtest ${bt.ms.toFixed(0)} ms (${bt.cpuMs.toFixed(0)} ms CPU); ${bt.result.changed.toLocaleString('en-US')} changed`,
    )

    // A day later: the first N answers have expired.
    const purge = timed(() => log.purgeAnswers(now + 24 * 60 * 60 * 1000))
    console.log(`purge: ${purge.result.toLocaleString('en-US')} expired answers deleted in ${purge.ms.toFixed(0)} ms (${purge.cpuMs.toFixed(0)} ms CPU)`)
  } finally {
    await rc.close()
    store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
