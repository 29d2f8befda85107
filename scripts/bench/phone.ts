/**
 * Benchmark: offline phone lookups per second (riskcheck's phone check core path) against the raw library cost —
 * `libphonenumber-js/max` parse + isValid + getType — on the same 100,000 mixed numbers, in one process.
 *
 * Mixed numbers (deterministic xorshift PRNG, seed 12345), from libphonenumber's example numbers
 * (test/fixtures/phone/example-numbers.json, every type of every region):
 *   40 % E.164 of an example number with its last 3 digits randomised,
 *   30 % the national form of an example number read with its region as the default country,
 *   20 % `+` + a random calling code + 6–12 random digits,
 *   10 % junk (letters, punctuation, emoji, half numbers).
 *
 * Measured paths:
 *   raw      parsePhoneNumberFromString(text, country) → isValid() → getType()
 *   lookup   phoneCheck.prepare() + phoneCheck.run() offline (validation, parse once, formats, line type, carrier /
 *            region / time zone from the prefix tables, factors) — what `rc.phone()` does minus result assembly,
 *            cache and scoring
 *   phoneType  phoneTypeCheck.prepare() + run()
 * After a warm-up pass (which also loads the prefix tables), three rounds over all numbers run the paths interleaved
 * in chunks of 5,000 (so all see the same load on a shared machine); prints the mean numbers/s and the ratio
 * lookup ÷ raw (time per number). Target: ≤ 1.5×.
 *
 * Run: npx tsx scripts/bench/phone.ts [count]
 */
import { createRiskcheck } from '../../src/riskcheck.js'
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max'
import { phoneCheck } from '../../src/checks/phone.js'
import { phoneTypeCheck } from '../../src/checks/phone-type.js'
import type { CheckContext, Sources } from '../../src/checks/types.js'
import { resolveOptions } from '../../src/options.js'
import { createPhoneSource } from '../../src/sources/phone/index.js'
import { xorshift } from '../../test/xorshift.js'

interface Example {
  region: string
  cc: string
  type: string
  national: string
}

const COUNT = Number(process.argv[2] ?? 100_000)

const next = xorshift(12345)
const rand = (): number => next() / 4294967296
const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!
const digits = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 10)).join('')

const examples = JSON.parse(readFileSync(new URL('../../test/fixtures/phone/example-numbers.json', import.meta.url), 'utf8')) as Example[]
const callingCodes = [...new Set(examples.map((e) => e.cc))]
const JUNK = ['hello', 'call me', '+', '++44', '12', '😀📞', '+1 (201) 55', 'n/a', '000', '+44 20 7946 09585555555', 'tel:', 'x123', '()', '+999 123456']

const inputs: Array<{ text: string; country: CountryCode }> = []
for (let i = 0; i < COUNT; i++) {
  const r = rand()
  const e = pick(examples)
  if (r < 0.4) inputs.push({ text: `+${e.cc}${e.national.slice(0, -3)}${digits(3)}`, country: 'US' })
  else if (r < 0.7) inputs.push({ text: e.national, country: e.region as CountryCode })
  else if (r < 0.9) inputs.push({ text: `+${pick(callingCodes)}${digits(6 + Math.floor(rand() * 7))}`, country: 'US' })
  else inputs.push({ text: pick(JUNK), country: 'US' })
}

const options = resolveOptions({ offline: true })
const phone = createPhoneSource({})
const ctx: CheckContext = { now: options.now, mode: 'live', offline: true, sources: { phone } as unknown as Sources, options }

let sink = 0
// The whole public lookup (prepare, run, scoring, result object) through the facade, cache off so every call works.
const rc = createRiskcheck({ offline: true, cache: false })

async function runFacade(list: typeof inputs): Promise<number> {
  const t0 = performance.now()
  for (const { text, country } of list) {
    try {
      const r = await rc.phone(text, { country })
      if (r.details.valid) sink++
    } catch {
      sink-- // INVALID_INPUT (e.g. empty junk): counted as work done
    }
  }
  return performance.now() - t0
}

function runRaw(list: typeof inputs): number {
  const t0 = performance.now()
  for (const { text, country } of list) {
    const n = parsePhoneNumberFromString(text, country)
    if (n && n.isValid() && n.getType()) sink++
  }
  return performance.now() - t0
}

async function runCheck(list: typeof inputs, def: typeof phoneCheck | typeof phoneTypeCheck): Promise<number> {
  const t0 = performance.now()
  for (const { text, country } of list) {
    const opts = { country }
    const { input } = def.prepare(text, opts, ctx)
    const out = await def.run(ctx, input, opts)
    if (out.details.valid) sink++
  }
  return performance.now() - t0
}

async function main(): Promise<void> {
  const mem0 = process.memoryUsage().heapUsed
  const tLoad = performance.now()
  // warm-up: JIT both paths and load every prefix table section the inputs touch
  const warm = inputs.slice(0, Math.min(20_000, inputs.length))
  runRaw(warm)
  await runCheck(inputs, phoneCheck)
  await runCheck(warm, phoneTypeCheck)
  await runFacade(warm)
  const warmMs = performance.now() - tLoad
  const mem1 = process.memoryUsage().heapUsed

  // Interleaved in chunks so that both paths see the same machine load (the benchmark host is shared).
  const CHUNK = 5_000
  const ROUNDS = 3
  const rounds: Record<'raw' | 'lookup' | 'phoneType' | 'rc.phone', number[]> = { raw: [], lookup: [], phoneType: [], 'rc.phone': [] }
  for (let round = 0; round < ROUNDS; round++) {
    let raw = 0
    let lookup = 0
    let phoneType = 0
    let facade = 0
    for (let i = 0; i < inputs.length; i += CHUNK) {
      const chunk = inputs.slice(i, i + CHUNK)
      raw += runRaw(chunk)
      lookup += await runCheck(chunk, phoneCheck)
      phoneType += await runCheck(chunk, phoneTypeCheck)
      facade += await runFacade(chunk)
    }
    rounds.raw.push(raw)
    rounds.lookup.push(lookup)
    rounds.phoneType.push(phoneType)
    rounds['rc.phone'].push(facade)
  }
  const total = (k: keyof typeof rounds) => rounds[k].reduce((a, b) => a + b, 0) / ROUNDS
  const perSec = (ms: number) => Math.round((COUNT / ms) * 1000)
  const valid = inputs.filter(({ text, country }) => parsePhoneNumberFromString(text, country)?.isValid()).length

  console.log(`phone benchmark: ${COUNT.toLocaleString('en')} mixed numbers (${valid.toLocaleString('en')} valid), Node ${process.version}`)
  console.log(`warm-up incl. loading prefix tables: ${warmMs.toFixed(0)} ms, heap +${((mem1 - mem0) / 1048576).toFixed(1)} MB`)
  for (const k of ['raw', 'lookup', 'phoneType', 'rc.phone'] as const) {
    console.log(
      `${k.padEnd(10)} mean ${total(k).toFixed(0).padStart(6)} ms per 100k-pass  ${perSec(total(k)).toLocaleString('en').padStart(9)} numbers/s   rounds: ${rounds[k].map((x) => x.toFixed(0)).join(', ')} ms`,
    )
  }
  const ratio = total('lookup') / total('raw')
  const ratioType = total('phoneType') / total('raw')
  const perRound = rounds.raw.map((r, i) => (rounds.lookup[i]! / r).toFixed(2)).join(', ')
  console.log(`ratio phone lookup / raw libphonenumber-js/max: ${ratio.toFixed(2)}x per number (rounds: ${perRound}; target <= 1.50x: ${ratio <= 1.5 ? 'met' : 'NOT met'})`)
  console.log(`ratio phone/type lookup / raw libphonenumber-js/max: ${ratioType.toFixed(2)}x`)
  const ratioFacade = total('rc.phone') / total('raw')
  console.log(
    `ratio rc.phone() (whole lookup: scoring + result object) / raw: ${ratioFacade.toFixed(2)}x (target <= 1.50x: ${ratioFacade <= 1.5 ? 'met' : 'NOT met'})`,
  )
  await rc.close()
  if (sink < 0) console.log(sink)
}

void main()
