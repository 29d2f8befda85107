/**
 * Benchmark (a) of the email lookup: offline checks per second (no DNS, no SMTP) against `deep-email-validator`
 * with its network checks off (regex + typo + disposable) and `mailchecker.isValid` (syntax + disposable), on the
 * same inputs, in one run. Prints ops/s and ratios.
 *
 *   npx tsx scripts/bench/email-offline.ts [--seconds 1.5]
 *
 * riskcheck is measured twice: the check alone (prepare + run: syntax, disposable/role/free lists, provider, typo)
 * and the full lookup pipeline (plus scoring and the result object). The peers do less: neither detects role
 * accounts, free providers or the provider; mailchecker suggests no typos.
 */
import { performance } from 'node:perf_hooks'
import deepEmailValidator from 'deep-email-validator'
import mailchecker from 'mailchecker'
import { emailCheck } from '../../src/checks/email/index.js'
import { CACHE_TTL_MS } from '../../src/cache.js'
import { UNMETERED } from '../../src/credits.js'
import { runLookup } from '../../src/lookup.js'
import { resolveOptions } from '../../src/options.js'
import { DEFAULT_POLICY } from '../../src/scoring/rules.js'
import { createSources } from '../../src/sources/index.js'
import type { CheckContext } from '../../src/checks/types.js'

const secondsArg = process.argv.indexOf('--seconds')
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 1.5

/** A deterministic mix: ordinary addresses, typos, disposable, role, IDN, and malformed input. */
function buildInputs(): string[] {
  const firsts = ['jane', 'john', 'maria', 'li.wei', 'o.brien', 'anna-lena', 'k.smith+news', 'dev_ops', 'zoë', 'müller']
  const domains = [
    'gmail.com', 'yahoo.com', 'outlook.com', 'hotmail.co.uk', 'icloud.com', 'proton.me', 'gmx.de', 'web.de', 'acme-corp.com',
    'university.edu', 'startup.io', 'bücher.de', 'gmial.com', 'hotmail.con', 'yaho.com', 'outlok.com', 'mailinator.com',
    'guerrillamail.com', '10minutemail.com', 'sub.yopmail.com',
  ]
  const roles = ['info', 'support', 'admin', 'sales', 'noreply']
  const bad = ['plainaddress', 'a@b', 'jane@@gmail.com', 'Jane <jane@gmail.com>', 'jane..doe@gmail.com', '"q"@x.com', 'x@localhost', 'a b@c.com', '@gmail.com', 'jane@-bad-.com']
  const out: string[] = []
  for (let i = 0; i < 600; i++) {
    const f = firsts[i % firsts.length]!
    const d = domains[(i * 7) % domains.length]!
    out.push(i % 13 === 0 ? `${roles[i % roles.length]}@${d}` : `${f}${i % 3 === 0 ? i : ''}@${d}`)
  }
  for (const b of bad) for (let k = 0; k < 6; k++) out.push(b)
  return out
}

interface Row {
  name: string
  opsPerSec: number
  note: string
}

async function measure(name: string, note: string, inputs: string[], fn: (input: string) => unknown | Promise<unknown>): Promise<Row> {
  // warm-up
  for (const input of inputs) await fn(input)
  let ops = 0
  const deadline = performance.now() + SECONDS * 1000
  const t0 = performance.now()
  while (performance.now() < deadline) {
    for (const input of inputs) {
      const r = fn(input)
      if (r instanceof Promise) await r
    }
    ops += inputs.length
  }
  const elapsed = (performance.now() - t0) / 1000
  return { name, opsPerSec: ops / elapsed, note }
}

async function main(): Promise<void> {
  const inputs = buildInputs()
  const resolved = resolveOptions({ offline: true, cache: false })
  const sources = createSources(resolved)
  const ctx: CheckContext = { now: resolved.now, mode: 'live', offline: true, sources, options: resolved }
  const env = { ctx, cache: null, cacheTtlMs: CACHE_TTL_MS, ledger: UNMETERED, policy: DEFAULT_POLICY }

  // Sanity: the same inputs give sensible answers everywhere.
  const sample = 'jane@gmial.com'
  const ours = await emailCheck.run(ctx, emailCheck.prepare(sample, {}, ctx).input, {})
  const deep = await deepEmailValidator({ email: sample, validateMx: false, validateSMTP: false })
  console.log(`sample ${sample}: riskcheck did_you_mean=${ours.details.did_you_mean} factors=${ours.factors.join(',')}; ` +
    `deep-email-validator valid=${deep.valid} reason=${deep.reason}; mailchecker isValid=${mailchecker.isValid(sample)}`)

  const rows: Row[] = []
  rows.push(
    await measure('riskcheck emailCheck (prepare+run)', 'syntax, disposable, role, free, provider, typo', inputs, async (input) => {
      const prepared = emailCheck.prepare(input, { smtp: false }, ctx)
      return emailCheck.run(ctx, prepared.input, { smtp: false })
    }),
  )
  rows.push(
    await measure('riskcheck full lookup (runLookup)', '+ scoring and the result object', inputs, (input) => runLookup(env, emailCheck, input, { smtp: false })),
  )
  rows.push(
    await measure('deep-email-validator (no MX/SMTP)', 'regex, typo (mailcheck), disposable', inputs, (input) =>
      deepEmailValidator({ email: input, validateMx: false, validateSMTP: false }),
    ),
  )
  rows.push(await measure('mailchecker.isValid', 'syntax regex + disposable list', inputs, (input) => mailchecker.isValid(input)))

  const ref = rows[0]!.opsPerSec
  console.log(`\n${inputs.length} inputs per round, ${SECONDS} s per contender, Node ${process.version}`)
  console.log('ratio = riskcheck check throughput / contender throughput (> 1: riskcheck is faster)\n')
  console.log(`${'contender'.padEnd(38)} ${'checks/s'.padStart(12)} ${'riskcheck check / this'.padStart(24)}   what it does`)
  for (const r of rows) {
    console.log(`${r.name.padEnd(38)} ${Math.round(r.opsPerSec).toLocaleString('en-US').padStart(12)} ${(ref / r.opsPerSec).toFixed(2).padStart(23)}×   ${r.note}`)
  }
  await sources.close()
}

await main()
